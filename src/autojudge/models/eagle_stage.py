"""Stage eagle's work: an EAGLE head trained on a target's own greedy responses, resumable, saved for vLLM.

The responses are stage distill's (``distilled_draft.target_responses``: generated once, kept in
``<out>.responses.json``), the teacher-forced rows those of ``eagle.build_examples`` (only response
positions are scored, where vLLM drafts), the loop that of ``eagle_training.train_head``. Beside the
head directory ``out`` (``config.json`` and ``model.safetensors``: vLLM's ``speculative_config`` model
with method ``eagle``) the training state lives in ``<out>.training`` (``checkpoint.pt``, ``curve.json``):
a rerun with the same settings and responses continues from the checkpoint, or reads a finished run back.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
from transformers import PreTrainedModel

from autojudge.models.distilled_draft import Row, target_responses
from autojudge.models.eagle import EagleExamples, build_examples
from autojudge.models.eagle_training import CHECKPOINT, EagleTraining, train_head
from autojudge.models.pair import load_causal_lm
from autojudge.models.tokenizer import load_tokenizer
from autojudge.params import EagleParams, VllmParams


def training_dir(out: Path) -> Path:
    """Where the training state of the head at ``out`` lives (DVC keeps it: ``persist``)."""
    return Path(out).with_name(f"{Path(out).name}.training")


def training_settings(settings: EagleParams) -> EagleTraining:
    """The training loop's settings of a params entry."""
    return EagleTraining(
        max_steps=settings.steps,
        batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        regression_weight=settings.regression_weight,
        noise=settings.noise,
        eval_every=settings.eval_every,
        checkpoint_every=settings.checkpoint_every,
        patience=settings.patience,
        seed=settings.seed,
    )


def response_examples(target: PreTrainedModel, rows: list[Row], batch_size: int) -> EagleExamples:
    """Teacher-forced rows of (prompt, response) pairs, response positions scored; empty responses skipped."""
    rows = [(prompt, response) for prompt, response in rows if response]
    return build_examples(target, [p + r for p, r in rows], [len(p) for p, _ in rows], batch_size)


def _checkpoint_step(directory: Path, name: str) -> int:
    """The step of the checkpoint a run starts from (0: none), said on stdout."""
    path = directory / CHECKPOINT
    if not path.is_file():
        return 0
    state = torch.load(path, weights_only=True)
    finished = f", finished ({state['stopped']}): read back" if state["stopped"] else ""
    print(f"eagle.{name}: checkpoint {path} at step {state['step']}{finished}")
    return int(state["step"])


def build_eagle(settings: EagleParams, chat_template: bool, vllm: VllmParams, name: str) -> dict:
    """Train (or resume) the head of ``settings`` and save it; the figures of its metrics file."""
    torch.manual_seed(settings.seed)
    tokenizer = load_tokenizer(settings.target, "target")
    target = load_causal_lm(settings.target, torch.float32, role="target")
    responses = target_responses(settings, chat_template, vllm, target, tokenizer)
    started = time.perf_counter()
    train = response_examples(target, responses["train"], settings.batch_size)
    held_out = response_examples(target, responses["evaluation"], settings.batch_size)
    examples_seconds = time.perf_counter() - started
    directory = training_dir(settings.out)
    resumed_from = _checkpoint_step(directory, name)
    started = time.perf_counter()
    head, curve = train_head(target, train, held_out, training_settings(settings), directory, settings.out)
    seconds = time.perf_counter() - started
    steps = curve["points"][-1]["step"]
    return {
        "held_out_agreement": round(curve["best_agreement"], 4),
        "agreement_before_training": curve["points"][0]["agreement"],
        "agreement_curve": {str(p["step"]): p["agreement"] for p in curve["points"]},
        "best_step": curve["best_step"],
        "steps": steps,
        "stopped": curve["stopped"],
        "resumed_from_step": resumed_from,
        "training_seconds": round(seconds, 1),
        "seconds_per_step": round(seconds / (steps - resumed_from), 3) if steps > resumed_from else None,
        "examples_seconds": round(examples_seconds, 1),
        "parameters": sum(t.numel() for t in head.weights().values()),
        "head_bytes": sum(p.stat().st_size for p in Path(settings.out).iterdir() if p.is_file()),
        "target_accuracy": round(responses["target_accuracy"], 4),
        "train_responses": len(train),
        "train_positions": train.positions(),
        "held_out_positions": held_out.positions(),
    }
