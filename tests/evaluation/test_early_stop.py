"""Stopping a validation candidate: exactly when no ending of its remaining problems keeps the budget."""

import itertools

from autojudge.evaluation.early_stop import LossLimit


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
