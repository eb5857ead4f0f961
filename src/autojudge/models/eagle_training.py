"""Training an EAGLE head on a target's teacher-forced hidden states: seeded, resumable, early-stopped.

The loss of a position is the cross-entropy of the head's logits against the target's next-token
distribution (soft labels: the target's LM head on its next hidden state) plus, as in EAGLE, a
smooth-L1 regression of that next hidden state (the head's output feeds its next draft in vLLM).
Everything lives under one directory: ``checkpoint.pt`` (every ``checkpoint_every`` steps; a rerun
resumes from it and ends where an uninterrupted run ends), ``curve.json`` (held-out agreement at every
evaluation) and ``head/`` (the best head by held-out agreement, loadable by vLLM; stage eagle saves it
elsewhere, so that DVC can keep the training state apart from the head).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch.nn import functional
from tqdm import tqdm
from transformers import PreTrainedModel

from autojudge.errors import InputError
from autojudge.io import atomic_path, write_json
from autojudge.models.eagle import EagleExamples, EagleHead, agreement, new_head, save_head

CHECKPOINT = "checkpoint.pt"
CURVE = "curve.json"
HEAD = "head"


@dataclass(frozen=True)
class EagleTraining:
    """Settings of one training run; a checkpoint resumes only under the same settings."""

    max_steps: int = 2000
    batch_size: int = 16
    learning_rate: float = 1e-3
    regression_weight: float = 1.0
    noise: float = 0.0  # EAGLE's uniform noise on the input hidden states, U(-noise, noise)
    eval_every: int = 50
    checkpoint_every: int = 50
    patience: int = 5  # evaluations without a better held-out agreement before stopping
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("max_steps", "batch_size", "eval_every", "checkpoint_every", "patience"):
            if getattr(self, name) < 1:
                raise InputError(f"eagle training: {name} must be at least 1, got {getattr(self, name)}")
        if self.learning_rate <= 0 or self.regression_weight < 0 or self.noise < 0:
            raise InputError("eagle training: learning_rate must be > 0, regression_weight and noise >= 0")


def _loss(
    head: EagleHead, batch: tuple[torch.Tensor, ...], settings: EagleTraining, generator: torch.Generator
) -> torch.Tensor:
    """Soft-label cross-entropy against the target's next-token distribution + weighted smooth-L1."""
    tokens, hidden_in, hidden_next, scored = batch
    if settings.noise:
        hidden_in = hidden_in + settings.noise * (2 * torch.rand(hidden_in.shape, generator=generator) - 1)
    out = head(tokens, hidden_in)[scored]
    wanted = hidden_next[scored]
    with torch.no_grad():
        labels = torch.softmax(head.logits(wanted), dim=-1)
    cross_entropy = -(labels * torch.log_softmax(head.logits(out), dim=-1)).sum(-1).mean()
    return cross_entropy + settings.regression_weight * functional.smooth_l1_loss(out, wanted)


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


def _fresh_state(head: EagleHead, settings: EagleTraining, rows: list[int], held_out: EagleExamples) -> dict:
    first = agreement(head, held_out)
    return {
        "settings": asdict(settings),
        "rows": rows,
        "step": 0,
        "head": None,
        "optimizer": None,
        "generator": None,
        "losses": [],
        "curve": [{"step": 0, "train_loss": None, "agreement": round(first, 6)}],
        "best_step": 0,
        "best_agreement": first,
        "best_weights": {k: v.clone() for k, v in head.weights().items()},
        "stale": 0,
        "stopped": None,
    }


def _read_state(path: Path, settings: EagleTraining, rows: list[int]) -> dict:
    state = torch.load(path, weights_only=True)
    if state["settings"] != asdict(settings) or state["rows"] != rows:
        raise InputError(
            f"{path} was written by a run with other settings or data ({state['settings']}, rows "
            f"{state['rows']}): delete it or train with those"
        )
    return state


def train_head(
    target: PreTrainedModel,
    train: EagleExamples,
    held_out: EagleExamples,
    settings: EagleTraining,
    out: Path,
    head_out: Path | None = None,
) -> tuple[EagleHead, dict]:
    """Train (or resume, or read back) a head for ``target`` under ``out``; the best head and its curve.

    The best head is saved to ``head_out`` (default ``out/head``)."""
    if not len(train) or not held_out.positions():
        raise InputError("eagle training needs training rows and scored held-out positions")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = [len(train), train.positions(), len(held_out), held_out.positions()]
    head = new_head(target, settings.seed)
    optimizer = torch.optim.AdamW(head.parameters(), lr=settings.learning_rate, weight_decay=0.0)
    generator = torch.Generator().manual_seed(settings.seed)
    checkpoint = out / CHECKPOINT
    if checkpoint.is_file():
        state = _read_state(checkpoint, settings, rows)
        head.load_state_dict(state["head"])
        optimizer.load_state_dict(state["optimizer"])
        generator.set_state(state["generator"])
    else:
        state = _fresh_state(head, settings, rows, held_out)
        write_json(out / CURVE, _curve(state))
    progress = tqdm(total=settings.max_steps, initial=state["step"], desc="eagle", unit="step", mininterval=5)
    head.train()
    while state["stopped"] is None and state["step"] < settings.max_steps:
        picked = torch.randint(len(train), (settings.batch_size,), generator=generator).tolist()
        loss = _loss(head, train.batch(picked), settings, generator)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0)
        optimizer.step()
        state["step"] += 1
        state["losses"].append(float(loss.detach()))
        progress.update(1)
        step = state["step"]
        if step % settings.eval_every == 0 or step == settings.max_steps:
            _evaluate(head, held_out, settings, state, out)
        if step % settings.checkpoint_every == 0 or state["stopped"] or step == settings.max_steps:
            state.update(
                head=head.weights(), optimizer=optimizer.state_dict(), generator=generator.get_state()
            )
            _save(checkpoint, state)
    progress.close()
    head.load_state_dict(state["best_weights"])
    head.eval()
    save_head(head, out / HEAD if head_out is None else Path(head_out))
    return head, _curve(state)


def _evaluate(
    head: EagleHead, held_out: EagleExamples, settings: EagleTraining, state: dict, out: Path
) -> None:
    """Append a curve point, keep the best weights, decide whether to stop, write ``curve.json``."""
    head.eval()
    score = agreement(head, held_out)
    head.train()
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
        state["best_weights"] = {k: v.clone() for k, v in head.weights().items()}
    else:
        state["stale"] += 1
    if state["stale"] >= settings.patience:
        state["stopped"] = "patience"
    elif state["step"] >= settings.max_steps:
        state["stopped"] = "max_steps"
    write_json(out / CURVE, _curve(state))
