"""The rate search: each method's highest rate within each budget found by bisection and a midpoint,
on fewer decodes than the full ladder, every chosen point bracketed from above unless it is rate 1."""

import torch

from autojudge.evaluation.comparison import _at_edge
from autojudge.evaluation.rate_search import RateSearch

LADDER = [0.01, 0.03, 0.1, 0.25, 0.5, 0.75, 1.0]
BUDGETS = [0.01, 0.02]


def _run(edges: dict[str, float], refine: int = 1) -> tuple[RateSearch, list[list]]:
    """Search methods whose drop is 0 up to their edge rate, 0.015 up to 1.5x it, then 0.5 (or None:
    stopped early); returns the search and the settings of each round."""
    scores = {method: torch.linspace(0.0, 1.0, 201) for method in edges}
    search = RateSearch(scores, LADDER, BUDGETS, window=8, refine=refine)
    rounds = []
    while probes := search.next_round():
        rounds.append(probes)
        for setting in probes:
            edge = edges[setting.method]
            drop = 0.0 if setting.rate <= edge else 0.015 if setting.rate <= 1.5 * edge else None
            search.record(setting, drop)
    return search, rounds


def test_each_budget_is_bracketed_and_refined():
    search, rounds = _run({"fsd-tv": 0.3, "fly": 1.0, "kl-mask": 0.005})
    tv = search.methods["fsd-tv"]
    assert tv.bracket(0.01) == (0.25, 0.375)  # 0.25 within, 0.5 not: the midpoint 0.375 lost 1.5 points
    assert tv.bracket(0.02) == (0.375, 0.5)  # ... within 2 points: its best there
    assert search.methods["fly"].bracket(0.01) == (1.0, None)  # lossless: rate 1, the only allowed edge
    assert search.methods["kl-mask"].bracket(0.02) == (0.0, 0.01)  # loses at the lowest rung: none
    decoded = sum(len(probes) for probes in rounds)
    assert decoded < 3 * len(LADDER)  # the full ladder: 7 per method


def test_a_decoded_candidate_is_not_decoded_again():
    _, rounds = _run({"topk": 0.5})
    names = [s.name for probes in rounds for s in probes]
    assert len(names) == len(set(names))


def test_a_chosen_point_is_at_the_edge_only_without_a_higher_rate_decoded():
    rows = {
        "a": {"method": "fsd-tv", "rate": 0.5},
        "b": {"method": "fsd-tv", "rate": 0.75},
        "c": {"method": "fly", "rate": 1.0},
    }
    assert not _at_edge(rows, "fsd-tv", "a") and _at_edge(rows, "fsd-tv", "b")
    assert not _at_edge(rows, "fly", "c")
