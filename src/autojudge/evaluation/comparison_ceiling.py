"""The ceiling in the comparison's verdict: how much of what a perfect judge gains each chosen point reaches,
and where each rule fails on labelled mismatches.

The first ``compare.ceiling_problems`` problems of the validation split are mined with Algorithm 1 (as stage
mine mines) and replayed at the comparison's window (:mod:`autojudge.evaluation.ceiling`): the ceiling is the
MAT ratio over exact SD of the judge that accepts exactly the unimportant mismatches, with its 95%
paired-bootstrap interval over those problems. A chosen point's share of it is
``(its MAT ratio over exact SD - 1) / (the ceiling's - 1)``: its ratio is the test split's (decoded), the
ceiling's the validation problems' (replayed), both over exact SD at the same window. On the same labelled
mismatches, teacher-forced along each mined response as the grids score them, each chosen point accepts a
share of the important and of the unimportant ones (FLy: its entropy gate alone, without the deferral).
Where the validation split is the mining split, the heads were trained on these labels.

This module decodes nothing; :func:`autojudge.evaluation.comparison_decode.compare_methods` mines and scores,
and :mod:`autojudge.evaluation.comparison` prints the section (``ceiling_markdown``, ``ceiling_sentence``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from autojudge.evaluation.ceiling import Accepts, ceiling_summary, mismatch_acceptance, share_of_ceiling
from autojudge.mining.search import MinedProblem


def chosen_points(chosen: Mapping[str, Mapping[str, str | None]]) -> dict[str, dict]:
    """Setting name -> its method and the budgets that chose it, every chosen point but exact SD's."""
    points: dict[str, dict] = {}
    for budget, by_method in chosen.items():
        for method, name in by_method.items():
            if name is not None and method != "exact":
                points.setdefault(name, {"method": method, "budgets": []})["budgets"].append(budget)
    return points


def _rounded(value: float) -> float | None:
    """``value`` to 4 decimals; nan (no gain, no mismatch of a label): None."""
    return None if math.isnan(value) else round(value, 4)


def ceiling_section(
    problems: Sequence[MinedProblem],
    accepts: Mapping[str, Accepts],
    comparison: dict,
    split: str,
    samples: int,
    seed: int,
) -> dict:
    """The ceiling of ``problems`` (mined on ``split``) at the comparison's window, and per chosen point
    (``accepts``: setting name -> its acceptance of a labelled mismatch) its share of the ceiling on each
    test split and its acceptance of the important and the unimportant mismatches."""
    window = comparison["protocol"]["window"]
    summary = ceiling_summary(problems, [window], samples, seed)
    figures = summary.pop("windows")[str(window)]
    points = []
    for name, point in chosen_points(comparison["chosen"]).items():
        gains = {
            test: table["table"][point["method"]][point["budgets"][0]]["mat_gain_vs_exact_sd"]
            for test, table in comparison["splits"].items()
        }
        accepted = mismatch_acceptance(problems, accepts[name])
        points.append(
            {
                "setting": name,
                **point,
                "mat_gain_vs_exact_sd": gains,
                "share_of_ceiling": {
                    test: _rounded(share_of_ceiling(gain["value"], 1.0, figures["ratio"]["value"]))
                    for test, gain in gains.items()
                },
                "accepted": {label: _rounded(share) for label, share in accepted.items()},
            }
        )
    return {"split": split, "window": window, **summary, **figures, "points": points}
