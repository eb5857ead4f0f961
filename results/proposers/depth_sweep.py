"""Issue 37, item 1: distilled drafts of the fine-tuned SmolLM2 target at several depths, each trained until
held-out agreement stops improving, each committed small.

A draft of depth L is the target's first L layers with a LoRA adapter on their projections
(:mod:`autojudge.models.lora_draft`), trained on the target's greedy responses to preset smollm2-arith's
distillation problems (its ``distill`` entry: the same target, problems and response length), the best step
chosen on 60 **validation** problems (``--held-out``) (the preset's draft reports agreement on test, which a choice must not
see). Per depth, committed in ``results/proposers/depths/draft-<L>/``: ``adapter.safetensors`` (with its
settings) and ``training.json`` (the curve, the best step, what made it, the time); the merged draft goes to
``models/smollm2-arith/draft-<L>`` (what vLLM loads) and the training state to
``models/smollm2-arith/draft-<L>.training/`` (git-ignored): a rerun resumes an interrupted depth and reads
a finished one back. Writes ``results/proposers/depths/depths.md`` and ``curves.png``.

Run from the repository root with preset smollm2-arith or smollm2-eagle applied (the target built:
``dvc repro finetune@smollm2-arith``), nothing timed on the cores::

    python results/proposers/depth_sweep.py --layers 4 8 12 --bf16-autocast  # on CPUs with AVX512-BF16 or AMX

Then ``python results/proposers/proposers.py --drafts models/smollm2-arith/draft-4 ...`` measures them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

import torch
import yaml
from preset import DRAFT_PRESET  # this folder's

from autojudge.bench.machine import processor_name
from autojudge.io import read_json, write_json, write_text
from autojudge.models.distilled_draft import target_responses
from autojudge.models.early_stopping import checkpoint_step
from autojudge.models.finetuned_target import plot_learning_curve
from autojudge.models.lora_draft import DraftTraining, adapted_draft, save_adapter, train_draft_adapter
from autojudge.models.pair import load_causal_lm, model_signature, save_checkpoint
from autojudge.models.tokenizer import load_tokenizer
from autojudge.params import DistillParams, load_params

OUT = Path("results/proposers/depths")
MODELS = Path("models/smollm2-arith")


def _settings(args: argparse.Namespace, layers: int, batch_size: int) -> DraftTraining:
    return DraftTraining(
        layers=layers,
        rank=args.rank,
        alpha=2.0 * args.rank,
        max_steps=args.steps,
        batch_size=batch_size,
        learning_rate=args.learning_rate,
        eval_every=args.eval_every,
        checkpoint_every=args.eval_every,
        patience=args.patience,
        bf16_autocast=args.bf16_autocast,
    )


def _committed(folder: Path, made_by: dict) -> dict | None:
    """The committed record of a depth that finished training with these settings, if there is one."""
    path = folder / "training.json"
    if not (path.is_file() and (folder / "adapter.safetensors").is_file()):
        return None
    record = read_json(path)
    return record if record["made_by"] == made_by else None


def train_depth(
    target_dir: Path, target, tokenizer, responses: dict, settings: DraftTraining, pad: int
) -> dict:
    """One depth trained (or resumed, or read back), its adapter and merged draft saved; its record."""
    folder, state = OUT / f"draft-{settings.layers}", MODELS / f"draft-{settings.layers}.training"
    made_by = {"target": model_signature(target_dir), **asdict(settings)}
    committed = _committed(folder, made_by)
    if committed:  # finished by an earlier run (perhaps on another machine): its committed adapter, merged
        save_checkpoint(
            adapted_draft(target, folder / "adapter.safetensors"), tokenizer, MODELS / folder.name
        )
        return committed
    resumed_from, finished = checkpoint_step(state)
    started = time.perf_counter()
    weights, curve = train_draft_adapter(
        target, responses["train"], responses["evaluation"], settings, pad, state
    )
    seconds = time.perf_counter() - started
    save_adapter(folder / "adapter.safetensors", weights, settings)
    draft = adapted_draft(target, folder / "adapter.safetensors")
    save_checkpoint(draft, tokenizer, MODELS / f"draft-{settings.layers}")
    steps = curve["points"][-1]["step"]
    timing = {"resumed_from_step": resumed_from, "seconds": round(seconds, 1)}
    timing["seconds_per_step"] = round(seconds / (steps - resumed_from), 3) if steps > resumed_from else None
    if finished and (folder / "training.json").is_file():  # read back: the run that trained keeps its times
        timing = read_json(folder / "training.json")["timing"]
    record = {
        "made_by": made_by,
        "held_out": "validation",
        "held_out_agreement": round(curve["best_agreement"], 4),
        "best_step": curve["best_step"],
        "steps": steps,
        "stopped": curve["stopped"],
        "curve": curve["points"],
        "trained_parameters": sum(t.numel() for t in weights.values()),
        "adapter_bytes": (folder / "adapter.safetensors").stat().st_size,
        "timing": timing,
    }
    write_json(folder / "training.json", record)
    return record


def plot(records: dict[int, dict], path: Path) -> None:
    """Held-out agreement against training steps, one line per depth."""
    points = [
        {"step": p["step"], f"{layers} layers": p["agreement"]}
        for layers, record in sorted(records.items())
        for p in record["curve"]
    ]
    plot_learning_curve(points, path, "LoRA drafts of the SmolLM2 target", ylabel="held-out agreement, %")


def markdown(records: dict[int, dict], command: str) -> str:
    lines = [
        "# Distilled drafts by depth (LoRA on the target's first layers)",
        "",
        f"`{command}` ({datetime.now(UTC):%Y-%m-%d}, {processor_name()}, {os.cpu_count()} CPUs). Held-out "
        "agreement: the draft's teacher-forced argmax equals the target's greedy token, on the target's "
        "responses to the validation problems; the best step is kept.",
        "",
        "| layers | trained parameters | adapter, MB | held-out agreement | best step | steps | stopped | s/step |",
        "|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for layers, r in sorted(records.items()):
        lines.append(
            f"| {layers} | {r['trained_parameters']:,} | {r['adapter_bytes'] / 1e6:.1f} | {r['held_out_agreement']:.1%} "
            f"| {r['best_step']} | {r['steps']} | {r['stopped']} | {r['timing']['seconds_per_step']} |"
        )
    return "\n".join(lines) + "\n\n![held-out agreement by step](curves.png)\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--layers", type=int, nargs="+", default=[4, 8, 12])
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument(
        "--steps", type=int, default=2000, help="at most; training stops when agreement stalls"
    )
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--patience", type=int, default=4)
    parser.add_argument(
        "--bf16-autocast", action="store_true", help="bfloat16 products (CPUs with AVX512-BF16 or AMX only)"
    )
    parser.add_argument("--problems", type=int, help="training problems (default: the distill entry's)")
    parser.add_argument("--held-out", type=int, default=60, help="validation problems scoring each step")
    args = parser.parse_args()
    params = load_params(args.params)
    entry = DistillParams(**next(iter(yaml.safe_load(DRAFT_PRESET.read_text())["distill"].values())))
    if params.pair.target != entry.target or not (entry.target / "config.json").is_file():
        sys.exit(
            f"{args.params}: apply preset smollm2-arith (or smollm2-eagle) and build {entry.target} first"
        )
    # the distillation problems, held out on validation; the responses kept beside the drafts
    entry = entry.model_copy(
        update={
            "problems": args.problems or entry.problems,
            "eval_split": "validation",
            "eval_problems": args.held_out,
            "out": MODELS / "depths",
        }
    )
    torch.manual_seed(0)
    tokenizer = load_tokenizer(entry.target, "target")
    target = load_causal_lm(entry.target, torch.float32, role="target")
    responses = target_responses(entry, params.pair.chat_template, params.mining.vllm, target, tokenizer)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    command = "python results/proposers/depth_sweep.py " + " ".join(sys.argv[1:])
    records: dict[int, dict] = {}
    for (
        layers
    ) in args.layers:  # the table and plot after each depth: an interrupted sweep leaves its finished ones
        settings = _settings(args, layers, entry.batch_size)
        records[layers] = train_depth(entry.target, target, tokenizer, responses, settings, pad)
        plot(records, OUT / "curves.png")
        write_text(OUT / "depths.md", markdown(records, command.strip()))
    print((OUT / "depths.md").read_text())


if __name__ == "__main__":
    main()
