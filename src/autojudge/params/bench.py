"""The vLLM tokens/s benchmark (``bench``) and the checks of a benchmark plan, shared with the benchmark
itself when it copies the plan with updates."""

# ruff: noqa: RUF012 - pydantic copies mutable field defaults per instance; ruff only recognises a model
# whose pydantic base is in the same file (Section is in params.base)

from __future__ import annotations

from typing import Any

from pydantic import Field, PositiveInt, model_validator

from autojudge.params.base import Section
from autojudge.rules.config import THRESHOLD_BOUNDS


class BenchParams(Section):
    """vLLM tokens/s benchmark (stage bench): engine settings are mining.vllm's."""

    split: str = "test"
    problems: PositiveInt = 6  # first N problems of the split, timed, the same for every setting
    accuracy_problems: PositiveInt = 6  # first N problems decoded once per setting and window (untimed)
    windows: list[PositiveInt] = [1, 8]  # grid each setting's window is chosen from (paper: 6..64)
    overhead_window: PositiveInt = 8  # window of the judge-overhead measurement (one of windows)
    thresholds: list[float] = []  # AutoJudge (rule judge) thresholds besides the head's own
    batch_sizes: list[PositiveInt] = [1, 8]  # requests per call; 1 must be one of them
    tuning_repeats: PositiveInt = 1  # passes that only choose each setting's window (not reported)
    tuning_problems: PositiveInt = 4  # engines_together, several windows: the N after the timed ones
    repeats: PositiveInt = 2  # timed passes per setting after the tuning ones; medians reported
    bootstrap_samples: int = Field(default=2000, ge=100)  # paired bootstrap over problems: 95% intervals
    seed: int = 0  # of the bootstrap's resampling and of the rounds' order (bench.vllm_plan.round_orders)
    meter_interval: float = Field(default=0.1, gt=0)  # seconds between nvidia-smi power samples
    min_ratio: float = Field(default=1.3, gt=0)  # AutoJudge/stock SD tokens/s below this: explain why
    # every engine alive at once, each in its own processes, and every setting's passes interleaved with all
    # the others (ratios across engines compare the same minutes); memory for every engine; several windows:
    # each setting's window is chosen on short tuning passes first, one window's engines at a time
    engines_together: bool = False

    @model_validator(mode="after")
    def _check(self) -> BenchParams:
        problems = bench_plan_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def bench_plan_problems(bench: Any) -> list[str]:
    """Why a benchmark plan (``BenchParams`` or a copy with updates) cannot produce its figures."""
    problems = []
    windows, sizes = list(bench.windows), list(bench.batch_sizes)
    if not windows or any(w < 1 for w in windows) or len(set(windows)) < len(windows):
        problems.append(f"bench.windows must be distinct positive draft windows, got {windows}")
    elif bench.overhead_window not in windows:
        problems.append(
            f"bench.overhead_window {bench.overhead_window} must be one of bench.windows {windows}"
        )
    if any(size < 1 for size in sizes) or 1 not in sizes or len(set(sizes)) < len(sizes):
        problems.append(
            f"bench.batch_sizes must be distinct positive sizes including 1 (the per-problem timings), got {sizes}"
        )
    low, high = THRESHOLD_BOUNDS["judge"]
    outside = [threshold for threshold in bench.thresholds if not low <= threshold <= high]
    if outside:
        problems.append(
            f"bench.thresholds: {', '.join(f'{t:g}' for t in outside)} must be in [{low:g}, {high:g}], "
            "the judge rule's threshold range (a head's p(important))"
        )
    for name in ("problems", "accuracy_problems", "repeats", "tuning_repeats", "tuning_problems"):
        if getattr(bench, name) < 1:
            problems.append(f"bench.{name} must be >= 1, got {getattr(bench, name)}")
    if bench.bootstrap_samples < 100:
        problems.append(f"bench.bootstrap_samples must be >= 100, got {bench.bootstrap_samples}")
    return problems
