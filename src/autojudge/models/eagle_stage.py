"""EAGLE heads for real targets: trained by a command into a committed directory, installed by stage eagle.

``autojudge eagle train`` (:func:`train_eagle`) trains the head of a params ``eagle`` entry on the target's
own greedy responses (stage distill's function, kept in ``<head>.responses.json``), teacher-forced rows of
``eagle.build_examples`` (response positions scored, where vLLM drafts) and the loop of
``eagle_training.train_head``, with its resumable state in ``<head>.training``. The best head goes to the
entry's ``head`` directory (``config.json``, ``model.safetensors``) with ``training.json``: what made it
(the entry's settings and the target's signature) and its figures; small enough to commit, as the
fine-tuned target's LoRA adapter is. Stage eagle (:func:`install_eagle`) checks that the committed head was
trained for the entry and its target, and copies it to ``out``, what vLLM loads: seconds, not hours.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import torch
from transformers import PreTrainedModel

from autojudge.errors import InputError
from autojudge.io import atomic_path, read_json, write_json
from autojudge.models.distilled_draft import Row, target_responses
from autojudge.models.eagle import WEIGHTS, EagleExamples, build_examples
from autojudge.models.eagle_training import EagleTraining, train_head
from autojudge.models.early_stopping import CHECKPOINT, checkpoint_step
from autojudge.models.pair import load_causal_lm, model_signature
from autojudge.models.tokenizer import load_tokenizer
from autojudge.params import EagleParams, VllmParams

RECORD = "training.json"  # beside the committed head: what made it and its figures
HEAD_FILES = ("config.json", WEIGHTS)  # what vLLM loads


def training_dir(head: Path) -> Path:
    """Where the training state of the head at ``head`` lives (git-ignored)."""
    return Path(head).with_name(f"{Path(head).name}.training")


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
    step, stopped = checkpoint_step(directory)
    if step:
        finished = f", finished ({stopped}): read back" if stopped else ""
        print(f"eagle.{name}: checkpoint {directory / CHECKPOINT} at step {step}{finished}")
    return step


def trained_with(settings: EagleParams) -> dict:
    """The entry's settings that make a head (not where its target, head and copy are kept)."""
    return settings.model_dump(mode="json", exclude={"target", "out", "head"})


def made_by(settings: EagleParams) -> dict:
    """What a head is trained from: the entry's settings and the target's signature."""
    return {"target": model_signature(settings.target), **trained_with(settings)}


def train_eagle(settings: EagleParams, chat_template: bool, vllm: VllmParams, name: str) -> dict:
    """Train (or resume) the head of ``settings`` into ``settings.head`` with its record; the record."""
    torch.manual_seed(settings.seed)
    beside_head = settings.model_copy(update={"out": settings.head})  # responses kept beside the head
    tokenizer = load_tokenizer(settings.target, "target")
    target = load_causal_lm(settings.target, torch.float32, role="target")
    responses = target_responses(beside_head, chat_template, vllm, target, tokenizer)
    started = time.perf_counter()
    train = response_examples(target, responses["train"], settings.batch_size)
    held_out = response_examples(target, responses["evaluation"], settings.batch_size)
    examples_seconds = time.perf_counter() - started
    directory = training_dir(settings.head)
    resumed_from = _checkpoint_step(directory, name)
    started = time.perf_counter()
    head, curve = train_head(target, train, held_out, training_settings(settings), directory, settings.head)
    seconds = time.perf_counter() - started
    steps = curve["points"][-1]["step"]
    record = {
        "made_by": made_by(settings),
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
        "head_bytes": sum((Path(settings.head) / f).stat().st_size for f in HEAD_FILES),
        "target_accuracy": round(responses["target_accuracy"], 4),
        "train_responses": len(train),
        "train_positions": train.positions(),
        "held_out_positions": held_out.positions(),
    }
    write_json(Path(settings.head) / RECORD, record)
    return record


def install_eagle(settings: EagleParams, name: str) -> dict:
    """Stage eagle: the committed head copied to ``settings.out`` once its record matches the entry and its
    target; the record's figures (its metrics)."""
    head = Path(settings.head)
    retrain = f"`autojudge eagle train --name {name}` trains it"
    if not all((head / f).is_file() for f in (*HEAD_FILES, RECORD)):
        raise InputError(
            f"eagle.{name}: {head} holds no trained head ({', '.join((*HEAD_FILES, RECORD))}): {retrain}"
        )
    record, expected = read_json(head / RECORD), made_by(settings)
    differing = sorted(
        k for k in expected.keys() | record["made_by"].keys() if expected.get(k) != record["made_by"].get(k)
    )
    if differing:
        raise InputError(
            f"eagle.{name}: the head in {head} was trained with other {', '.join(differing)} than this entry "
            f"and its target give: {retrain}"
        )
    with atomic_path(settings.out) as temporary:
        temporary.mkdir()
        for file in HEAD_FILES:
            shutil.copyfile(head / file, temporary / file)
    return {key: value for key, value in record.items() if key != "made_by"}
