"""One decoded split's intervals: accuracy and MAT resampled over problems."""

import pytest

from autojudge.evaluation.scoring import ExampleResult, summary_intervals


def result(index: int, correct: bool, tokens: int, target_passes: int) -> ExampleResult:
    return ExampleResult(str(index), correct, None, tokens, target_passes, 0, 0, 0.0, [])


def test_intervals_hold_the_point_figures_and_collapse_when_every_problem_is_alike():
    mixed = [result(i, i % 4 != 0, 40, 10 if i % 2 else 5) for i in range(20)]
    figures = summary_intervals(mixed, samples=500, seed=1)
    assert figures["accuracy"]["value"] == pytest.approx(0.75)
    assert figures["mat"]["value"] == pytest.approx(800 / 150)
    for figure in figures.values():
        assert figure["low"] < figure["value"] < figure["high"]
    alike = summary_intervals([result(i, True, 30, 10) for i in range(8)], samples=200)
    assert alike["accuracy"] == {"value": 1.0, "low": 1.0, "high": 1.0}
    assert alike["mat"]["low"] == alike["mat"]["high"] == pytest.approx(3.0)


def test_the_draft_alone_has_no_mat_interval():
    assert set(summary_intervals([result(0, True, 9, 0), result(1, False, 9, 0)], samples=100)) == {
        "accuracy"
    }
