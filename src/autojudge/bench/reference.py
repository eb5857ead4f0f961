"""Wall-time benchmark of reference speculative decoding against target-only greedy decoding."""

from __future__ import annotations

import statistics
from datetime import UTC, datetime

import torch

from autojudge.bench.energy import EnergyReading, PowerMeter, median_energy
from autojudge.bench.machine import processor_name
from autojudge.decoding.factory import speculative, target_only
from autojudge.evaluation.scoring import evaluate
from autojudge.models.pair import ModelPair
from autojudge.rules.acceptance import ExactMatch
from autojudge.tasks.base import Example, Task


def machine_of(pair: ModelPair) -> dict:
    """Where the benchmark ran: processor and threads, and the GPU when the pair is on one."""
    device = next(pair.target.parameters()).device
    machine = {
        "processor": processor_name(),
        "torch_threads": torch.get_num_threads(),
        "device": str(device),
    }
    if device.type == "cuda":
        machine["gpu"] = torch.cuda.get_device_name(device)
    return machine


def benchmark_reference_sd(
    pair: ModelPair,
    task: Task,
    examples: list[Example],
    windows: list[int],
    max_new_tokens: int,
    repeats: int,
) -> dict:
    """Median wall time over ``repeats`` runs of each method on the same examples, in one process.

    Methods run interleaved within each repeat so that machine load affects all of them alike.
    """
    decoders = {"target_greedy": target_only(pair, max_new_tokens)}
    for window in windows:
        decoders[f"sd_exact_w{window}"] = speculative(pair, ExactMatch(), window, max_new_tokens)
    seconds: dict[str, list[float]] = {name: [] for name in decoders}
    energy: dict[str, list[EnergyReading]] = {name: [] for name in decoders}
    summaries, outputs = {}, {}
    for _ in range(repeats):
        for name, decoder in decoders.items():
            with PowerMeter() as meter:
                summary, results = evaluate(task, examples, decoder, pair.tokenizer, name)
            seconds[name].append(summary.seconds)
            energy[name].append(meter.reading)
            summaries[name] = summary
            outputs[name] = [r.response_ids for r in results]
    baseline = statistics.median(seconds["target_greedy"])
    methods = {}
    for name, summary in summaries.items():
        median = statistics.median(seconds[name])
        methods[name] = {
            "accuracy": summary.accuracy,
            "mat": summary.mat,
            "tokens": summary.tokens,
            "median_seconds": round(median, 3),
            "seconds_per_repeat": [round(s, 3) for s in seconds[name]],
            "wall_time_ratio_vs_target": round(median / baseline, 3),
            "speedup_vs_target": round(baseline / median, 3),
            "identical_to_target_greedy": outputs[name] == outputs["target_greedy"],
            "energy": median_energy(energy[name], summary.tokens),
        }
    return {
        "benchmark": "reference speculative decoding (exact) vs target-only greedy, batch size 1",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": machine_of(pair),
        "pair": pair.name,
        "task": task.name,
        "examples": len(examples),
        "max_new_tokens": max_new_tokens,
        "repeats": repeats,
        "methods": methods,
    }
