"""Training until held-out agreement stops improving: seeded, resumable, the best weights kept.

A trainee (an EAGLE head, a draft's LoRA adapter) says how to compute one step's loss from a seeded
generator, how to score its held-out rows (teacher-forced agreement with the target) and which tensors it
trains. :func:`train_early_stopped` steps the optimizer, scores every ``eval_every`` steps, keeps the weights
of the best score, stops after ``patience`` evaluations without a better one, and keeps its state under one
directory: ``checkpoint.pt`` (every ``checkpoint_every`` steps; a rerun resumes from it and ends where an
uninterrupted run ends, a finished run is read back) and ``curve.json`` (held-out agreement at every
evaluation).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch
from tqdm import tqdm

from autojudge.errors import InputError
from autojudge.io import atomic_path, write_json

CHECKPOINT = "checkpoint.pt"
CURVE = "curve.json"


@dataclass(frozen=True)
class Schedule:
    """When to evaluate, checkpoint and stop."""

    max_steps: int
    eval_every: int
    checkpoint_every: int
    patience: int  # evaluations without a better held-out agreement before stopping


class Trainee(Protocol):
    """What the loop trains."""

    def parameters(self) -> Iterable[torch.nn.Parameter]: ...  # the trained ones (clipped together)

    def loss(self, generator: torch.Generator) -> torch.Tensor: ...  # one step's batch, drawn with generator

    def agreement(self) -> float: ...  # on the held-out rows

    def weights(self) -> dict[str, torch.Tensor]: ...  # what a checkpoint and the best state keep

    def load_weights(self, weights: dict[str, torch.Tensor]) -> None: ...

    def train(self, mode: bool = True) -> object: ...


def checkpoint_step(directory: Path) -> tuple[int, str | None]:
    """The step of the checkpoint under ``directory`` and why its run stopped ((0, None): no checkpoint)."""
    path = Path(directory) / CHECKPOINT
    if not path.is_file():
        return 0, None
    state = torch.load(path, weights_only=True)
    return int(state["step"]), state["stopped"]


def _save(path: Path, state: dict) -> None:
    with atomic_path(path) as temporary:
        torch.save(state, temporary)


def _curve(state: dict) -> dict:
    return {
        "settings": state["settings"],
        "rows": state["rows"],
        "points": state["curve"],
        "best_step": state["best_step"],
        "best_agreement": state["best_agreement"],
        "stopped": state["stopped"],
    }


def _fresh_state(trainee: Trainee, record: dict) -> dict:
    first = trainee.agreement()
    return {
        **record,
        "step": 0,
        "weights": None,
        "optimizer": None,
        "generator": None,
        "losses": [],
        "curve": [{"step": 0, "train_loss": None, "agreement": round(first, 6)}],
        "best_step": 0,
        "best_agreement": first,
        "best_weights": {k: v.clone() for k, v in trainee.weights().items()},
        "stale": 0,
        "stopped": None,
    }


def _read_state(path: Path, record: dict) -> dict:
    state = torch.load(path, weights_only=True)
    if any(state[key] != value for key, value in record.items()):
        raise InputError(
            f"{path} was written by a run with other settings or data ({state['settings']}, rows "
            f"{state['rows']}): delete it or train with those"
        )
    return state


def train_early_stopped(
    trainee: Trainee,
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
    schedule: Schedule,
    record: dict,
    out: Path,
    desc: str,
) -> dict:
    """Train ``trainee`` with its state under ``out`` (or resume, or read back a finished run); its curve.

    ``record`` (``{"settings": ..., "rows": ...}``) identifies the run: a checkpoint of another refuses to
    resume. On return the trainee holds its best weights, in eval mode."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    checkpoint = out / CHECKPOINT
    if checkpoint.is_file():
        state = _read_state(checkpoint, record)
        trainee.load_weights(state["weights"])
        optimizer.load_state_dict(state["optimizer"])
        generator.set_state(state["generator"])
    else:
        state = _fresh_state(trainee, record)
        write_json(out / CURVE, _curve(state))
    progress = tqdm(total=schedule.max_steps, initial=state["step"], desc=desc, unit="step", mininterval=5)
    trainee.train()
    while state["stopped"] is None and state["step"] < schedule.max_steps:
        loss = trainee.loss(generator)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(trainee.parameters()), 1.0)
        optimizer.step()
        state["step"] += 1
        state["losses"].append(float(loss.detach()))
        progress.update(1)
        step = state["step"]
        if step % schedule.eval_every == 0 or step == schedule.max_steps:
            _evaluate(trainee, schedule, state, out)
        if step % schedule.checkpoint_every == 0 or state["stopped"] or step == schedule.max_steps:
            state.update(
                weights=trainee.weights(), optimizer=optimizer.state_dict(), generator=generator.get_state()
            )
            _save(checkpoint, state)
    progress.close()
    trainee.load_weights(state["best_weights"])
    trainee.train(False)
    return _curve(state)


def _evaluate(trainee: Trainee, schedule: Schedule, state: dict, out: Path) -> None:
    """Append a curve point, keep the best weights, decide whether to stop, write ``curve.json``."""
    trainee.train(False)
    score = trainee.agreement()
    trainee.train()
    losses = state["losses"]
    state["curve"].append(
        {
            "step": state["step"],
            "train_loss": round(sum(losses) / len(losses), 6),
            "agreement": round(score, 6),
        }
    )
    state["losses"] = []
    if score > state["best_agreement"]:
        state.update(best_step=state["step"], best_agreement=score, stale=0)
        state["best_weights"] = {k: v.clone() for k, v in trainee.weights().items()}
    else:
        state["stale"] += 1
    if state["stale"] >= schedule.patience:
        state["stopped"] = "patience"
    elif state["step"] >= schedule.max_steps:
        state["stopped"] = "max_steps"
    write_json(out / CURVE, _curve(state))
