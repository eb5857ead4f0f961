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
machine's load; the timed figures, ratios and intervals come from the second phase only.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from autojudge.bench.vllm_analysis import choose_window
from autojudge.bench.vllm_measure import Measured
from autojudge.bench.vllm_plan import EXACT, OVERHEAD, TARGET, WindowsOf


@dataclass
class WindowTuning:
    """Median tokens/s of each setting's tuning passes by window, the window chosen for each, and the
    machine's 1-minute load before and after each window's phase."""

    problems: int
    first_problem: int  # the split's index of the first tuning problem (the timed ones come before it)
    repeats: int
    tokens_per_s: dict[str, dict[int, float]] = field(default_factory=dict)
    load_average_1m: dict[int, list[float]] = field(default_factory=dict)

    def add(self, window: int, measured: Measured, load: list[float]) -> None:
        """The tuning passes one window's engines measured (batch size 1)."""
        for name, per_size in measured.runs.items():
            rates = [run.tokens / run.seconds for run in per_size[1]]
            self.tokens_per_s.setdefault(name, {})[window] = round(statistics.median(rates), 2)
        self.load_average_1m[window] = [round(value, 2) for value in load]

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
            "chosen": self.chosen(),
            "load_average_1m": {str(w): load for w, load in sorted(self.load_average_1m.items())},
        }


def tuning_windows(windows_of: WindowsOf) -> Iterator[tuple[int, WindowsOf]]:
    """Phase 1's engines, one window at a time: each window with the settings that run at it (neither the
    target alone nor the judge-overhead setting, which has no window of its own to choose)."""
    tuned = {name: ws for name, ws in windows_of.items() if name not in (TARGET, OVERHEAD)}
    for window in sorted({w for ws in tuned.values() for w in ws}):
        yield window, {name: [window] for name, ws in tuned.items() if window in ws}


def timed_windows(chosen: dict[str, int]) -> WindowsOf:
    """Phase 2's engines: the target alone, and every setting at its chosen window; the judge-overhead
    setting at exact SD's."""
    return {TARGET: [0], **{name: [w] for name, w in chosen.items()}, OVERHEAD: [chosen[EXACT]]}


def tune_windows(
    windows_of: WindowsOf,
    measure_window: Callable[[WindowsOf], Measured],
    problems: int,
    first_problem: int,
    repeats: int,
) -> WindowTuning:
    """Phase 1: ``measure_window(settings)`` measures one window's settings, their engines alive together."""
    tuning = WindowTuning(problems, first_problem, repeats)
    for window, settings in tuning_windows(windows_of):
        before = os.getloadavg()[0]
        measured = measure_window(settings)
        tuning.add(window, measured, [before, os.getloadavg()[0]])
    return tuning
