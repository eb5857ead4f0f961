"""Stopping a candidate's validation decode once it can no longer end within the accuracy budget.

A candidate's accuracy drop against target greedy is (problems it lost - problems it gained) / N. Part
way through, its best possible end is that every problem still to come that target greedy got wrong
is gained and none is lost; once even that end exceeds the largest budget, no budget can choose the
candidate, and decoding the rest of its problems would only measure how far out it is. The stop is
exact, not a heuristic: a stopped candidate could not have been chosen.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Tally:
    """One candidate's problems so far against target greedy's."""

    lost: int = 0  # target right, candidate wrong
    gained: int = 0  # target wrong, candidate right
    decoded: int = 0


@dataclass
class LossLimit:
    """Per candidate (an index), whether it can still end within ``budget`` of ``reference``.

    ``reference``: per problem, whether target greedy answered it correctly."""

    reference: list[bool]
    budget: float
    tallies: dict[int, Tally] = field(default_factory=dict)
    stopped: set[int] = field(default_factory=set)
    _wrong_left: dict[int, int] = field(default_factory=dict)

    def add(self, candidate: int, problem: int, correct: bool) -> bool:
        """Count one decoded problem; True when this makes the candidate hopeless (once)."""
        tally = self.tallies.setdefault(candidate, Tally())
        wrong_left = self._wrong_left.setdefault(candidate, self.reference.count(False))
        reference = self.reference[problem]
        tally.decoded += 1
        tally.lost += reference and not correct
        tally.gained += correct and not reference
        self._wrong_left[candidate] = wrong_left - (not reference)
        best_drop = (tally.lost - tally.gained - self._wrong_left[candidate]) / len(self.reference)
        if candidate in self.stopped or best_drop <= self.budget + 1e-9:
            return False
        self.stopped.add(candidate)
        return True
