"""Finding each method's edge: the highest acceptance rate it can reach within each accuracy budget.

A fixed grid lets its ends decide: a method that loses nothing at its highest candidate below rate 1,
or loses already at its lowest, is cut off where the grid stops. Here every method searches the same
ladder of rates (``compare.rates``, a share of the validation mismatches; exact SD is rate 0) for every
budget, by bisection: the loss grows with the rate, so each probe halves the rungs still in question.
Once a budget's bracket is two neighbouring rungs (the higher rung lost more than the budget), it is
refined ``refine`` times at its midpoint, so the chosen point always has a decoded rate above it that
broke the budget, unless it is rate 1. All budgets' probes of a round are decoded together, and the
validation sweep stops a probe once it can no longer end within the largest budget
(:mod:`autojudge.evaluation.early_stop`).

Bisection assumes the loss does not fall as the rate grows; where noise breaks that, the search keeps
the highest rate it saw within the budget and brackets it from above.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from autojudge.evaluation.grids import setting_at
from autojudge.evaluation.setting import Setting

_SLACK = 1e-9


@dataclass
class _Method:
    """One method's sorted scores and what its probes gave: rate -> accuracy drop (None: stopped, beyond
    every budget)."""

    ordered: torch.Tensor
    drops: dict[float, float | None] = field(default_factory=dict)
    by_name: dict[str, float | None] = field(default_factory=dict)  # setting name -> its drop
    refined: dict[float, int] = field(default_factory=dict)  # budget -> midpoints probed

    def within(self, rate: float, budget: float) -> bool:
        drop = self.drops[rate]
        return drop is not None and drop <= budget + _SLACK

    def bracket(self, budget: float) -> tuple[float, float | None]:
        """(the highest rate within ``budget``, 0 when none; the lowest rate above it that broke it)."""
        low = max((r for r in self.drops if self.within(r, budget)), default=0.0)
        high = min((r for r in self.drops if r > low and not self.within(r, budget)), default=None)
        return low, high


@dataclass
class RateSearch:
    """The bisection of every method's rates (``scores``: method -> its sorted scores at the validation
    mismatches, :func:`autojudge.evaluation.grids.method_scores`) over ``ladder`` for every budget."""

    scores: dict[str, torch.Tensor]
    ladder: list[float]
    budgets: list[float]
    window: int
    refine: int = 1
    methods: dict[str, _Method] = field(init=False)

    def __post_init__(self) -> None:
        self.ladder = sorted(set(self.ladder))
        self.methods = {method: _Method(ordered) for method, ordered in self.scores.items()}

    def next_round(self) -> list[Setting]:
        """The candidates to decode next, at most one per method and budget (none: the search is done).
        A rate whose candidate was decoded already (top-K's ranks, clamped thresholds) takes its drop."""
        while True:
            probes: dict[str, Setting] = {}
            known = False
            for method, state in self.methods.items():
                for budget in self.budgets:
                    rate = self._probe(state, budget)
                    if rate is None:
                        continue
                    setting = setting_at(method, state.ordered, rate, self.window)
                    if setting.name in state.by_name:
                        state.drops[rate], known = state.by_name[setting.name], True
                        break
                    probes.setdefault(setting.name, setting)
            if not known:
                return list(probes.values())

    def _probe(self, state: _Method, budget: float) -> float | None:
        low, high = state.bracket(budget)
        open_rungs = [
            r for r in self.ladder if r > low and (high is None or r < high) and r not in state.drops
        ]
        if open_rungs:
            return open_rungs[len(open_rungs) // 2]
        if low == 0.0 or high is None or state.refined.get(budget, 0) >= self.refine:
            return None
        state.refined[budget] = state.refined.get(budget, 0) + 1
        return round((low + high) / 2, 6)

    def record(self, setting: Setting, drop: float | None) -> None:
        """What decoding ``setting`` on validation gave: its accuracy drop vs target greedy (None: stopped
        beyond every budget)."""
        state = self.methods[setting.method]
        state.drops[setting.rate] = state.by_name[setting.name] = drop
