"""Per-problem figures: what every interval's paired bootstrap resamples, and how result files keep them.

Plain data, no model stack: reading a results file (``autojudge interval``, the reports) imports nothing
heavy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autojudge.evaluation.scoring import ExampleResult


@dataclass(frozen=True)
class ProblemFigures:
    """One problem decoded with one setting: what the paired bootstrap resamples."""

    id: str
    correct: bool
    tokens: int
    target_passes: int


def problem_figures(results: list[ExampleResult]) -> list[ProblemFigures]:
    return [ProblemFigures(r.id, r.correct, r.tokens, r.target_passes) for r in results]


FIGURE_COLUMNS = ("id", "correct", "tokens", "target_passes")


def figure_columns(problems: list[ProblemFigures]) -> dict[str, list]:
    """Per-problem figures as parallel lists (one per field, in problem order): compact in JSON."""
    return {column: [getattr(p, column) for p in problems] for column in FIGURE_COLUMNS}


def figures_from_columns(columns: dict[str, list]) -> list[ProblemFigures]:
    """The inverse of :func:`figure_columns`."""
    return [
        ProblemFigures(str(i), bool(c), int(t), int(p))
        for i, c, t, p in zip(*(columns[column] for column in FIGURE_COLUMNS), strict=True)
    ]
