"""Domain shift rows: paired intervals on hand-made problems, and a table that says what it shows."""

import pytest

from autojudge.errors import InputError
from autojudge.evaluation.crossdomain import Domain, domain_row, head_table
from autojudge.evaluation.figures import ProblemFigures


def figures(correct: list[bool], tokens: int, passes: int) -> list[ProblemFigures]:
    return [ProblemFigures(str(i), c, tokens, passes) for i, c in enumerate(correct)]


def test_a_row_compares_the_head_with_target_and_exact_sd_on_the_same_problems():
    target = figures([True] * 10, 20, 20)
    exact = figures([True] * 10, 20, 10)  # MAT 2
    judged = figures([True] * 8 + [False] * 2, 20, 5)  # MAT 4, two answers lost
    row = domain_row(Domain("arith", "variant"), "pyfunc", False, target, exact, judged, 500, 0)
    assert (row["domain"], row["head"], row["own"], row["examples"]) == (
        "arith:variant",
        "pyfunc",
        False,
        10,
    )
    assert row["competent"] and row["target_accuracy"] == 1.0 and row["judge_accuracy"] == 0.8
    assert row["exact_mat"] == 2.0 and row["judge_mat"] == 4.0
    assert row["accuracy_drop"]["value"] == pytest.approx(0.2)
    assert 0.0 <= row["accuracy_drop"]["low"] <= 0.2 <= row["accuracy_drop"]["high"] <= 0.5
    gain = row["mat_gain_vs_exact_sd"]
    assert gain["value"] == gain["low"] == gain["high"] == pytest.approx(2.0)  # the same on every problem


def test_the_table_marks_the_own_domain_and_a_domain_outside_the_targets_competence():
    target = figures([True, False, False, False], 10, 10)
    row = domain_row(Domain("arith", "shifted"), "arith", True, target, target, target, 200, 0)
    assert not row["competent"] and row["own"]
    line = head_table([row]).splitlines()[-1]
    assert line.startswith("| arith:shifted (own) | 4 | 25.0% (outside competence) |")
    assert "0.0 [0.0, 0.0]" in line and "1.00x [1.00, 1.00]" in line


@pytest.mark.parametrize("text", ["arith", ":test", "arith:"])
def test_a_domain_is_task_colon_split(text):
    with pytest.raises(InputError, match="is not task:split"):
        Domain.parse(text)
    assert Domain.parse("pyfunc:test") == Domain("pyfunc", "test")
