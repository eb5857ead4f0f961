"""Paired bootstrap intervals over problems: every reported speed ratio and accuracy drop carries one.

Both settings ran on the same problems, so problems are resampled together (paired): one draw
picks ``n`` problem indices with replacement and evaluates ``statistic`` on both settings' values
at those indices. The interval is the percentile interval of ``samples`` draws, from a seeded
``numpy`` Generator, so the same inputs give the same interval. A winner is named only when the
interval excludes the neutral value (:func:`verdict`).

    point, low, high = paired_bootstrap(tokens_and_seconds_a, tokens_and_seconds_b, rate_ratio, 2000, 0)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

Statistic = Callable[[np.ndarray, np.ndarray], float]


def paired_bootstrap(
    values_a: Sequence[Any],
    values_b: Sequence[Any],
    statistic: Statistic,
    samples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """``statistic(a, b)`` on all problems, and its ``confidence`` percentile interval over resampled problems.

    ``values_a`` and ``values_b`` hold one entry per problem (a number, or a row of numbers such as
    tokens and seconds), in the same problem order.
    """
    a, b = np.asarray(values_a, dtype=float), np.asarray(values_b, dtype=float)
    if len(a) != len(b):
        raise ValueError(f"paired bootstrap: {len(a)} values against {len(b)}; pairs need the same problems")
    if len(a) == 0:
        raise ValueError("paired bootstrap: no problems")
    if samples < 1 or not 0 < confidence < 1:
        raise ValueError(f"paired bootstrap: samples {samples}, confidence {confidence}")
    point = float(statistic(a, b))
    indices = np.random.default_rng(seed).integers(0, len(a), size=(samples, len(a)))
    draws = np.array([statistic(a[rows], b[rows]) for rows in indices], dtype=float)
    tail = (1 - confidence) / 2
    low, high = np.quantile(draws, [tail, 1 - tail])
    return point, float(low), float(high)


def rate_ratio(a: np.ndarray, b: np.ndarray) -> float:
    """(sum a[:, 0] / sum a[:, 1]) / (sum b[:, 0] / sum b[:, 1]): e.g. tokens/s of a over tokens/s of b."""
    return float((a[:, 0].sum() / a[:, 1].sum()) / (b[:, 0].sum() / b[:, 1].sum()))


def rate_of_first(a: np.ndarray, b: np.ndarray) -> float:
    """sum a[:, 0] / sum a[:, 1], ignoring b: e.g. MAT, tokens over target passes, of one setting."""
    return float(a[:, 0].sum() / a[:, 1].sum())


def mean_difference(a: np.ndarray, b: np.ndarray) -> float:
    """mean(a) - mean(b): e.g. accuracy of a minus accuracy of b."""
    return float(a.mean() - b.mean())


def mean_of_first(a: np.ndarray, b: np.ndarray) -> float:
    """mean(a), ignoring b: a one-sample interval through the same resampling."""
    return float(a.mean())


def verdict(low: float, high: float, neutral: float, above: str, below: str) -> str:
    """``above`` when the interval lies above ``neutral``, ``below`` when below, else not distinguishable."""
    if low > neutral:
        return above
    if high < neutral:
        return below
    return "not distinguishable"
