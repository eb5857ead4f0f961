"""Timing decoders for the vLLM benchmark: the plan's tuning and timed rounds of every setting at every
batch size, in each round's order, with the machine's load; their energy, and each run's summary (medians,
MAT, step time, per-problem seconds)."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from autojudge.bench.energy import EnergyReading, PowerMeter, median_energy
from autojudge.bench.vllm_plan import Round

# One decode call: prompts -> (generated tokens, target forward passes) per prompt.
DecodeFn = Callable[[Sequence[Sequence[int]]], list[tuple[list[int], int]]]


@dataclass
class Run:
    """One pass of a setting over the timed problems at one batch size."""

    batch_size: int
    tuning: bool  # a tuning pass: chooses the window, never reported
    seconds: float
    outputs: list[list[int]]
    passes: list[int]  # target forward passes per problem
    energy: EnergyReading
    problem_seconds: list[float] | None = None  # batch size 1: each problem timed on its own

    @property
    def tokens(self) -> int:
        return sum(len(tokens) for tokens in self.outputs)

    @property
    def target_passes(self) -> int:
        return sum(self.passes)


@dataclass
class RoundRecord:
    """A round as it ran: tuning or timed, the settings' order, the 1-minute load average at its start and end."""

    tuning: bool
    order: list[str]
    load_1m: list[float]

    def report(self) -> dict[str, Any]:
        return {"phase": "tuning" if self.tuning else "timed", "order": self.order, "load_1m": self.load_1m}


@dataclass
class Measured:
    """Runs by setting and batch size, accuracy-problem tokens by setting, each setting's engine, and the
    rounds that ran them (a part taken with :meth:`only` carries none: the rounds belong to the whole)."""

    runs: dict[str, dict[int, list[Run]]] = field(default_factory=dict)
    accuracy: dict[str, list[list[int]]] = field(default_factory=dict)
    runners: dict[str, dict[str, str]] = field(default_factory=dict)
    rounds: list[RoundRecord] = field(default_factory=list)

    def only(self, names: list[str], runner: dict[str, str]) -> Measured:
        """The runs and accuracy of ``names``, all on the engine ``runner`` describes."""
        return Measured(
            {name: self.runs[name] for name in names},
            {name: self.accuracy[name] for name in names},
            dict.fromkeys(names, runner),
        )

    def merged(self, other: Measured) -> Measured:
        return Measured(
            {**self.runs, **other.runs},
            {**self.accuracy, **other.accuracy},
            {**self.runners, **other.runners},
            [*self.rounds, *other.rounds],
        )


def _pass(
    decode: DecodeFn, prompts: Sequence[Sequence[int]], batch_size: int
) -> tuple[list[tuple[list[int], int]], list[float] | None]:
    """Decode every prompt, ``batch_size`` per call; at batch size 1 also each problem's seconds."""
    results: list[tuple[list[int], int]] = []
    if batch_size == 1:
        seconds = []
        for prompt in prompts:
            started = time.perf_counter()
            results += decode([prompt])
            seconds.append(time.perf_counter() - started)
        return results, seconds
    for start in range(0, len(prompts), batch_size):
        results += decode(prompts[start : start + batch_size])
    return results, None


def load_1m() -> float:
    """The machine's 1-minute load average."""
    return round(os.getloadavg()[0], 2)


def measure(
    decoders: dict[str, DecodeFn],
    prompts: Sequence[Sequence[int]],
    accuracy_prompts: Sequence[Sequence[int]],
    batch_sizes: Sequence[int],
    rounds: Sequence[Round],
    meter: Callable[[], PowerMeter],
) -> Measured:
    """A warm-up batch per decoder (the first ``max(batch_sizes)`` prompts), the ``rounds`` (each a pass of
    every setting in its order, at every batch size), then the accuracy pass."""
    largest = max(batch_sizes)
    for decode in decoders.values():
        _pass(decode, prompts[:largest], largest)
    measured = Measured({name: {size: [] for size in batch_sizes} for name in decoders})
    for tuning, order in rounds:
        if sorted(order) != sorted(decoders):
            raise ValueError(f"a round's order {order} is not the decoders' settings {list(decoders)}")
        record = RoundRecord(tuning, list(order), [load_1m()])
        for name in order:
            decode = decoders[name]
            for size in batch_sizes:
                with meter() as power:
                    started = time.perf_counter()
                    results, problem_seconds = _pass(decode, prompts, size)
                    seconds = time.perf_counter() - started
                measured.runs[name][size].append(
                    Run(
                        batch_size=size,
                        tuning=tuning,
                        seconds=seconds,
                        outputs=[tokens for tokens, _ in results],
                        passes=[passes for _, passes in results],
                        energy=power.reading,
                        problem_seconds=problem_seconds,
                    )
                )
        record.load_1m.append(load_1m())
        measured.rounds.append(record)
    for name, decode in decoders.items():  # untimed
        results, _ = _pass(decode, accuracy_prompts, largest)
        measured.accuracy[name] = [tokens for tokens, _ in results]
    return measured


def _timed(runs: list[Run]) -> list[Run]:
    timed = [run for run in runs if not run.tuning]
    if not timed:
        raise ValueError("no timed runs (every run is a tuning run)")
    return timed


def summarize_runs(runs: list[Run]) -> dict[str, Any]:
    """Medians over the timed runs; the tuning runs' median tokens/s; whether every run gave the same tokens."""
    timed, tuning = _timed(runs), [run for run in runs if run.tuning]
    first = timed[0]
    seconds = statistics.median(run.seconds for run in timed)
    return {
        "tokens_per_s": round(statistics.median(run.tokens / run.seconds for run in timed), 2),
        "seconds_per_problem": round(seconds / len(first.outputs), 5),
        "median_seconds": round(seconds, 4),
        "seconds_per_repeat": [round(run.seconds, 4) for run in timed],
        "tuning_tokens_per_s": (
            round(statistics.median(run.tokens / run.seconds for run in tuning), 2) if tuning else None
        ),
        "tuning_seconds_per_repeat": [round(run.seconds, 4) for run in tuning],
        "tokens": first.tokens,
        "target_passes": first.target_passes,
        "mat": round(first.tokens / first.target_passes, 4) if first.target_passes else None,
        "step_ms": (  # a step is one target pass of one request: batch size 1 only
            round(1000 * seconds / first.target_passes, 4)
            if first.batch_size == 1 and first.target_passes
            else None
        ),
        "same_tokens_every_repeat": all(run.outputs == first.outputs for run in runs),
        "energy": median_energy([run.energy for run in timed], first.tokens),
    }


def per_problem(runs: list[Run]) -> dict[str, list[float] | list[int]]:
    """Batch size 1: each problem's median seconds over the timed runs, its tokens and target passes."""
    timed = _timed(runs)
    if any(run.problem_seconds is None for run in timed):
        raise ValueError("per-problem seconds exist at batch size 1 only")
    first = timed[0]
    return {
        "seconds": [
            round(statistics.median(run.problem_seconds[i] for run in timed), 6)  # type: ignore[index]
            for i in range(len(first.outputs))
        ],
        "tokens": [len(tokens) for tokens in first.outputs],
        "passes": list(first.passes),
    }


def first_timed(measured: Measured, name: str) -> list[list[int]]:
    """The tokens of the first timed batch-size-1 pass of setting ``name``."""
    return _timed(measured.runs[name][1])[0].outputs
