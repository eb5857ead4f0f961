"""The accuracy threshold policy's pure parts: candidate grid and the choice within the budget."""

import pytest

from autojudge.errors import InputError
from autojudge.evaluation.calibration import candidate_thresholds, largest_within_budget


def test_candidates_span_low_to_high_geometrically():
    grid = candidate_thresholds(0.001, 0.1, 3)
    assert grid == pytest.approx([0.001, 0.01, 0.1])
    assert candidate_thresholds(0.05, 0.05, 4) == [0.05]  # one recall threshold: one candidate
    with pytest.raises(InputError, match="0 < low <= high"):
        candidate_thresholds(0.0, 0.1, 3)


def test_the_largest_threshold_within_the_budget_wins():
    rows = [
        {"threshold": 0.001, "accuracy": 1.0},
        {"threshold": 0.01, "accuracy": 0.995},
        {"threshold": 0.1, "accuracy": 0.97},
        {"threshold": 0.05, "accuracy": 0.99},
    ]
    assert largest_within_budget(rows, 1.0, 0.005) == 0.01
    assert largest_within_budget(rows, 1.0, 0.01) == 0.05
    assert largest_within_budget(rows, 1.0, 0.0) == 0.001
    # nothing within budget: the most conservative candidate
    assert largest_within_budget(rows[1:], 1.0, 0.001) == 0.01
