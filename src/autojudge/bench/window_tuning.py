"""Each setting's draft window, chosen on tuning passes when every engine stays alive together
(``bench.engines_together``) and ``bench.windows`` offers more than one.

A draft window is an engine's setting (vLLM's ``num_speculative_tokens``), and the engines of every
window cannot all be alive at once, so the choice and the timed figures come from two phases:

1. **Tuning**: one window after another, every engine of that window alive together; every setting
   decodes ``bench.tuning_problems`` problems at batch size 1 in ``bench.tuning_repeats`` interleaved
   passes. They are the split's problems right after the timed ones, so a window is never chosen on the
   problems it is then timed on (a window that got lucky on them would be favoured). A setting's window
   is the one whose passes gave the highest median tokens/s (``choose_window``: a tie goes to the
   smaller window); the judge-overhead setting follows exact SD's window, since the two are compared
   step for step.
2. **Timed**: every setting at its chosen window, all engines alive together, as with one window.

Windows are compared across phases that ran one after another, so each tuning phase records the
machine's load; the timed figures, ratios and intervals come from the second phase only. The tuning
passes' step times by window are kept for the step-cost fit (:func:`autojudge.bench.vllm_analysis.step_cost`),
since the timed phase runs each setting at one window.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from autojudge.bench.vllm_analysis import choose_window
from autojudge.bench.vllm_engines import measure_phase
from autojudge.bench.vllm_measure import Measured
from autojudge.bench.vllm_plan import BenchPlan, tuning_phases


@dataclass
class WindowTuning:
    """Median tokens/s and step time (ms per target pass) of each setting's tuning passes by window, the window
    chosen for each, the machine's 1-minute load before and after each window's phase, and each window's
    rounds (order and load)."""

    problems: int
    first_problem: int  # the split's index of the first tuning problem (the timed ones come before it)
    repeats: int
    tokens_per_s: dict[str, dict[int, float]] = field(default_factory=dict)
    step_ms: dict[str, dict[int, float]] = field(default_factory=dict)
    load_average_1m: dict[int, list[float]] = field(default_factory=dict)
    rounds: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, window: int, measured: Measured, load: list[float]) -> None:
        """The tuning passes one window's engines measured (batch size 1)."""
        for name, per_size in measured.runs.items():
            runs = per_size[1]
            rates = [run.tokens / run.seconds for run in runs]
            self.tokens_per_s.setdefault(name, {})[window] = round(statistics.median(rates), 2)
            steps = [1000 * run.seconds / run.target_passes for run in runs if run.target_passes]
            if steps:
                self.step_ms.setdefault(name, {})[window] = round(statistics.median(steps), 4)
        self.load_average_1m[window] = [round(value, 2) for value in load]
        self.rounds[window] = [record.report() for record in measured.rounds]

    def chosen(self) -> dict[str, int]:
        """Each tuned setting's fastest window (a tie goes to the smaller window)."""
        return {name: choose_window(rates) for name, rates in self.tokens_per_s.items()}

    def report(self) -> dict[str, Any]:
        return {
            "problems": self.problems,
            "first_problem": self.first_problem,
            "batch_size": 1,
            "repeats": self.repeats,
            "tokens_per_s": {
                name: {str(w): rate for w, rate in sorted(rates.items())}
                for name, rates in self.tokens_per_s.items()
            },
            "step_ms": {
                name: {str(w): ms for w, ms in sorted(steps.items())} for name, steps in self.step_ms.items()
            },
            "chosen": self.chosen(),
            "load_average_1m": {str(w): load for w, load in sorted(self.load_average_1m.items())},
            "rounds": {str(w): rounds for w, rounds in sorted(self.rounds.items())},
        }


def tune_windows(plan: BenchPlan) -> WindowTuning:
    """Phase 1: the plan's tuning phases one window after another
    (:func:`~autojudge.bench.vllm_plan.tuning_phases`), and what each setting measured at each window."""
    bench = plan.bench
    tuning = WindowTuning(len(plan.tuning_prompts), bench.problems, bench.tuning_repeats)
    for window, phase in tuning_phases(plan):
        before = os.getloadavg()[0]
        by_window, rounds = measure_phase(phase, plan.models)
        measured = reduce(Measured.merged, by_window.values())
        measured.rounds = rounds
        tuning.add(window, measured, [before, os.getloadavg()[0]])
    return tuning
