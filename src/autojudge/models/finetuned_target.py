"""A fine-tuned target: train its LoRA adapter, merge the committed adapter (stage finetune), measure it.

Training takes hours on two cores and minutes on a GPU, so it is a command (``autojudge finetune
train``) whose adapter is committed; the stage only folds that adapter into the base checkpoint,
refusing an adapter trained on another base.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from autojudge.errors import InputError
from autojudge.io import atomic_path
from autojudge.models.finetune import (
    Evaluation,
    curve_path,
    read_adapter,
    run_settings,
    train_adapter,
    training_rows,
)
from autojudge.models.lora import merge_adapter
from autojudge.models.pair import load_causal_lm, save_checkpoint, weights_digest
from autojudge.models.prompts import encode_prompt
from autojudge.models.tokenizer import load_tokenizer
from autojudge.params import FinetuneParams, task_data_dir
from autojudge.tasks import get_task


def _evaluation(settings: FinetuneParams, tokenizer, chat_template: bool, splits: list[str], limit: int):
    task = get_task(settings.task, task_data_dir(settings.task))
    examples = {split: task.load_split(split, limit) for split in splits}
    prompts = {
        split: [encode_prompt(tokenizer, task.build_prompt(e), chat_template) for e in rows]
        for split, rows in examples.items()
    }
    return Evaluation(task, prompts, examples, settings.max_response_tokens)


def plot_learning_curve(
    curve: list[dict],
    path: Path,
    title: str,
    decay_start: int | None = None,
    ylabel: str = "greedy accuracy, %",
) -> None:
    """Each series of ``curve``'s points (``{"step": ..., <series>: fraction}``; a point may hold some series
    only) in percent against training steps (PNG), the start of the learning rate's decay marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 3.5))
    for series in dict.fromkeys(key for point in curve for key in point if key != "step"):
        steps, values = zip(*[(p["step"], 100 * p[series]) for p in curve if series in p], strict=True)
        axes.plot(steps, values, marker="o", label=series)
    if decay_start is not None:
        axes.axvline(decay_start, color="grey", linestyle="--", linewidth=1, label="learning rate decays")
    axes.set(xlabel="training steps", ylabel=ylabel, title=title, ylim=(0, 100))
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    with atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=120)
    plt.close(figure)


def train_target_adapter(settings: FinetuneParams, chat_template: bool) -> dict:
    """Train (or resume) the adapter of ``settings`` on its task's training split; its summary (and the
    learning curve as a PNG beside the adapter)."""
    tokenizer = load_tokenizer(settings.base, "base")
    model = load_causal_lm(settings.base, torch.float32, role="base")
    task = get_task(settings.task, task_data_dir(settings.task))
    rows = training_rows(task, task.load_split(settings.split, settings.problems), tokenizer, chat_template)
    evaluation = _evaluation(settings, tokenizer, chat_template, settings.eval_splits, settings.eval_problems)
    summary = train_adapter(
        model, tokenizer, rows, evaluation, settings, run_settings(settings, chat_template)
    )
    problems = f"first {settings.eval_problems} problems of each split"
    decay_start = settings.steps - settings.decay_steps if settings.decay_steps else None
    plot_learning_curve(
        summary["curve"], curve_path(settings.adapter).with_suffix(".png"), problems, decay_start
    )
    return summary


def merged_target(settings: FinetuneParams, name: str) -> dict:
    """Fold the committed adapter into the base checkpoint and save it at ``out``; the stage's metrics."""
    started = time.perf_counter()
    state, alpha, steps, made_by = read_adapter(settings.adapter)
    digest = weights_digest(settings.base)
    if made_by.get("base_sha256") != digest:
        raise InputError(
            f"finetune.{name}: adapter {settings.adapter} was trained on another base checkpoint "
            f"(weights sha256 {made_by.get('base_sha256', '?')[:12]}, {settings.base} has {digest[:12]}): retrain it"
        )
    tokenizer = load_tokenizer(settings.base, "base")
    model = load_causal_lm(settings.base, torch.float32, role="base")
    merge_adapter(model, state, alpha)
    save_checkpoint(model, tokenizer, settings.out)
    return {
        "adapter": str(settings.adapter),
        "adapter_parameters": sum(t.numel() for t in state.values()),
        "base_parameters": sum(p.numel() for p in model.parameters()),
        "trained_steps": steps,
        "merge_seconds": round(time.perf_counter() - started, 1),
    }


def measure_target(settings: FinetuneParams, chat_template: bool, splits: list[str], limit: int) -> dict:
    """Greedy accuracy of the merged target (``out``) on the first ``limit`` problems of ``splits``, with
    each problem's id and whether it was solved."""
    if not Path(settings.out).is_dir():
        raise InputError(f"no merged target at {settings.out}: run dvc repro finetune first")
    tokenizer = load_tokenizer(settings.out, "fine-tuned target")
    model = load_causal_lm(settings.out, torch.float32, role="fine-tuned target")
    evaluation = _evaluation(settings, tokenizer, chat_template, splits, limit)
    started = time.perf_counter()
    solved = evaluation.solved(model, tokenizer, settings.eval_batch_size)
    return {
        "accuracy": {split: round(sum(rows) / len(rows), 4) for split, rows in solved.items()},
        "problems": {split: len(rows) for split, rows in solved.items()},
        "seconds": round(time.perf_counter() - started, 1),
        "per_problem": {
            split: [
                {"id": e.id, "solved": ok} for e, ok in zip(evaluation.examples[split], rows, strict=True)
            ]
            for split, rows in solved.items()
        },
    }
