"""The ceiling replay on hand-made mined problems whose target forwards are counted by hand, and on the
committed records of the EAGLE pair (issue 63's figures)."""

from pathlib import Path

import pytest

from autojudge.errors import InputError
from autojudge.evaluation.ceiling import (
    ceiling_summary,
    check_windows,
    exact_sd,
    judged,
    mismatch_acceptance,
    perfect_judge,
    replay,
    share_of_ceiling,
    target_passes,
)
from autojudge.mining.search import MinedProblem, Mismatch

ROOT = Path(__file__).resolve().parents[2]


def problem(
    name: str, length: int, mismatches: list[tuple[int, bool]], answer: str | None = "4"
) -> MinedProblem:
    """A mined problem of ``length`` response tokens with (position, important) mismatches."""
    response = list(range(100, 100 + length))
    return MinedProblem(
        id=name,
        prompt_ids=[1, 2],
        response_ids=response,
        initial_response_ids=response,
        answer=answer,
        mismatches=[Mismatch(p, response[p], 7, important) for p, important in mismatches],
    )


# one unimportant mismatch at 3 of 8 tokens; an important one at 0 and an unimportant one at 2 of 6 tokens
PROBLEMS = [problem("a", 8, [(3, False)]), problem("b", 6, [(0, True), (2, False)])]


@pytest.mark.parametrize(
    ("length", "rejected", "window", "passes"),
    [
        (8, [], 8, 1),  # all 8 accepted in one step (no bonus token needed)
        (8, [], 4, 2),  # 4 accepted + the bonus, twice: 10 >= 8
        (8, [3], 8, 2),  # 3 accepted + the target's token; then 4 left
        (8, [3], 2, 4),  # 0-2 | 3 | 4-6 | 7
        (5, [0, 1, 2, 3, 4], 4, 5),  # every proposal rejected: one token per forward
        (0, [], 4, 0),
    ],
)
def test_target_passes_counts_steps_by_hand(length, rejected, window, passes):
    assert target_passes(length, rejected, window) == passes


def test_the_perfect_judge_rejects_only_important_mismatches():
    """W=8: a: exact 2 forwards (0-3 | 4-7), ceiling 1; b: exact 3 (0 | 1-2 | 3-5), ceiling 2 (0 | 1-5)."""
    assert replay(PROBLEMS, 8, exact_sd).tolist() == [[8, 2], [6, 3]]
    assert replay(PROBLEMS, 8, perfect_judge).tolist() == [[8, 1], [6, 2]]
    # W=2: a: exact 4 (0-2 | 3 | 4-6 | 7), ceiling 3; b: exact 3 (0 | 1-2 | 3-5), ceiling 3 (0 | 1-3 | 4-5)
    assert replay(PROBLEMS, 2, exact_sd)[:, 1].tolist() == [4, 3]
    assert replay(PROBLEMS, 2, perfect_judge)[:, 1].tolist() == [3, 3]


def test_a_scored_rule_accepts_below_its_threshold_and_takes_its_share_of_the_ceiling():
    scores = {("a", 3): 0.2, ("b", 0): 0.5, ("b", 2): 0.9}
    assert mismatch_acceptance(PROBLEMS, judged(scores, 0.6)) == {"important": 1.0, "unimportant": 0.5}
    assert mismatch_acceptance(PROBLEMS, judged(scores, 0.1)) == {"important": 0.0, "unimportant": 0.0}
    assert mismatch_acceptance(PROBLEMS, perfect_judge) == {"important": 0.0, "unimportant": 1.0}
    # at 0.3 only a's mismatch is accepted: 1 + 3 forwards for 14 tokens at W=8; exact 5, ceiling 3
    assert replay(PROBLEMS, 8, judged(scores, 0.3))[:, 1].sum() == 4
    assert share_of_ceiling(14 / 4, 14 / 5, 14 / 3) == pytest.approx((3.5 - 2.8) / (14 / 3 - 2.8))
    assert share_of_ceiling(14 / 3, 14 / 5, 14 / 3) == pytest.approx(1.0)


def test_the_summary_reports_ratios_with_intervals_and_leaves_out_problems_without_an_answer():
    unanswered = problem("c", 5, [], answer=None)
    summary = ceiling_summary([*PROBLEMS, unanswered], (2, 8), samples=200, seed=0)
    assert (summary["problems"], summary["problems_without_answer"], summary["tokens"]) == (2, 1, 14)
    assert (summary["important"], summary["mismatches"]) == (1, 3)
    assert summary["important_fraction"]["value"] == pytest.approx(1 / 3, abs=1e-4)
    at8, at2 = summary["windows"]["8"], summary["windows"]["2"]
    assert at8["exact_mat"]["value"] == pytest.approx(14 / 5)
    assert at8["ceiling_mat"]["value"] == pytest.approx(14 / 3, abs=1e-4)
    assert at8["ratio"]["value"] == pytest.approx(5 / 3, abs=1e-4)
    assert at2["ratio"]["value"] == pytest.approx(7 / 6, abs=1e-4)
    for figures in (*at8.values(), *at2.values(), summary["important_fraction"]):
        assert figures["low"] <= figures["value"] <= figures["high"]
    assert ceiling_summary(PROBLEMS, (2, 8), samples=200, seed=0) == {**summary, "problems_without_answer": 0}


def test_a_problem_without_an_answer_cannot_be_replayed():
    with pytest.raises(InputError, match="problem c: no answer"):
        replay([problem("c", 5, [], answer=None)], 4, exact_sd)
    with pytest.raises(InputError, match="none of 1 mined problems has an answer"):
        ceiling_summary([problem("c", 5, [], answer=None)])


@pytest.mark.parametrize(
    ("windows", "message"),
    [
        ([], "no draft window"),
        ([0, 4], r"draft windows \[0\] out of range: need 1 <= W <= 192"),
        ([4, 193], r"draft windows \[193\] out of range"),
        ([4, 4], "repeat a window"),
    ],
)
def test_bad_windows_stop_with_one_line(windows, message):
    with pytest.raises(InputError, match=message):
        check_windows(windows, 192)


def test_the_committed_eagle_records_give_the_issues_ceiling():
    """Issue 63: the EAGLE pair's unseen problems, 44.0% important, ceiling 1.22x / 1.42x / 2.01x."""
    from autojudge.mining.shards import load_shard

    problems = load_shard(ROOT / "results/proposers/importance-unseen/eagle-head")
    summary = ceiling_summary(problems, (4, 8, 32), samples=50)
    assert summary["important_fraction"]["value"] == pytest.approx(0.440, abs=5e-4)
    ratios = [summary["windows"][w]["ratio"]["value"] for w in ("4", "8", "32")]
    assert ratios == pytest.approx([1.22, 1.42, 2.01], abs=5e-3)
