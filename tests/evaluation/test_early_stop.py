"""Stopping a validation candidate: exactly when no ending of its remaining problems keeps the budget."""

import itertools
from dataclasses import replace

from helpers import write_params

from autojudge.evaluation.early_stop import LossLimit
from autojudge.evaluation.setting import Setting
from autojudge.evaluation.sweep import run_settings
from autojudge.params import load_params


def test_a_candidate_stops_only_when_even_its_best_ending_breaks_the_budget():
    """Every order of outcomes on a small split: stopped iff the best possible final drop (every
    remaining problem the target got wrong gained, none lost) exceeds the budget; never stopped when the
    final drop keeps it."""
    reference = [True, True, True, False, True]
    for outcomes in itertools.product([True, False], repeat=len(reference)):
        limit = LossLimit(reference, budget=0.2)
        stops = [limit.add(0, problem, correct) for problem, correct in enumerate(outcomes)]
        final_drop = (sum(reference) - sum(outcomes)) / len(reference)
        assert sum(stops) <= 1 and (0 in limit.stopped) == any(stops)
        if final_drop <= 0.2:
            assert not any(stops)
        for step, stopped in enumerate(stops):
            if stopped:
                lost = sum(
                    r and not o for r, o in zip(reference[: step + 1], outcomes[: step + 1], strict=True)
                )
                gained = sum(
                    o and not r for r, o in zip(reference[: step + 1], outcomes[: step + 1], strict=True)
                )
                can_gain = reference[step + 1 :].count(False)
                assert (lost - gained - can_gain) / len(reference) > 0.2


def test_candidates_are_counted_apart():
    limit = LossLimit([True] * 10, budget=0.1)
    assert not limit.add(0, 0, False) and not limit.add(1, 0, True)
    assert limit.add(0, 1, False)  # two lost of ten: beyond 0.1 whatever comes
    assert limit.tallies[0].lost == 2 and limit.tallies[1].lost == 0 and limit.stopped == {0}


def test_a_candidate_kept_under_the_limit_has_the_figures_it_has_without_it(repo, tmp_path, arith_dir):
    """The reference engine's sweep scores each request as it finishes (the drop hook) and keeps those
    results: a candidate that was not stopped comes back as it does with no limit at all."""
    params = load_params(write_params(repo, tmp_path, arith_dir, {}))
    candidates = [Setting("exact", 8), Setting("topk", 8, k=50), Setting("topk", 8, k=2)]
    [(_, _, greedy)] = run_settings(params, [Setting("target")], "validation", 8, None)
    limit = LossLimit([problem.correct for problem in greedy], budget=0.0)
    kept = run_settings(params, candidates, "validation", 8, None, loss_limit=limit)
    unlimited = run_settings(params, candidates, "validation", 8, None)
    assert 0 not in limit.stopped and any(problem.correct for problem in greedy)  # exact SD loses nothing
    assert [s for s, _, _ in kept] == [s for i, (s, _, _) in enumerate(unlimited) if i not in limit.stopped]
    by_setting = {setting: (replace(summary, seconds=0), figures) for setting, summary, figures in unlimited}
    for setting, summary, figures in kept:
        assert (replace(summary, seconds=0), figures) == by_setting[setting]  # all but the clock
