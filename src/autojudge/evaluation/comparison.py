"""Comparing every acceptance rule and judge head under one protocol, with a verdict from intervals.

The protocol, the same for every method: each method's candidates sit at acceptance rates of the
validation mismatches (:mod:`autojudge.evaluation.grids`; exact SD is rate 0), searched per budget for
the highest rate that keeps it (:mod:`autojudge.evaluation.rate_search`), so no method is cut off by where
a hand-picked grid stops. For each accuracy budget, a method's operating point is its highest-MAT
candidate whose accuracy drop against target greedy on validation is within the budget
(:func:`choose_points`). Only the chosen points are decoded on the test splits, so nothing on a test
split chooses anything. There, each method gets a 95% paired-bootstrap interval over problems for its
accuracy drop against target greedy and its MAT gain over exact SD (:func:`split_table`), and the
verdict (:func:`decision`) names a winner only when the interval of its MAT ratio over the runner-up
excludes 1; otherwise it recommends the cheapest method not significantly slower than the fastest. Against
the ceiling, a perfect judge on Algorithm 1's labels, each chosen point's share of its gain and where each
rule fails on labelled mismatches: :mod:`autojudge.evaluation.comparison_ceiling`.

This module decodes nothing (the card and the reports read a comparison without the model stack);
:func:`autojudge.evaluation.comparison_decode.compare_methods` runs the protocol with the pair.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autojudge.evaluation import serving
from autojudge.evaluation.setting import Setting
from autojudge.evaluation.stats import mean_difference, paired_bootstrap, rate_ratio
from autojudge.rules.config import COMPARED_RULES as RULES
from autojudge.rules.config import HEADS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from autojudge.evaluation.figures import ProblemFigures

LABELS = {
    "judge": "AutoJudge head",
    "judge-context": "AutoJudge context head",
    "selfjudge": "SelfJudge head",
    "fsd-js": "FSD (JS)",
    "fsd-kl": "FSD (KL)",
    "fsd-tv": "FSD (TV)",
    "fsd-js-published": "FSD (JS), as published",
    "fsd-kl-published": "FSD (KL), as published",
    "fsd-tv-published": "FSD (TV), as published",
    "kl-mask": "KL + confidence mask",
    "target-entropy": "target entropy",
    "draft-entropy": "draft entropy",
    "fly": "FLy",
    "topk": "top-K",
    "exact": "exact SD",
}
SOURCES = {  # the paper each method follows, and the variant where there is a choice
    "judge": "AutoJudge (Garipov et al., 2025): Algorithm 1 labels, logistic-regression head",
    "judge-context": "Algorithm 1 labels; logistic regression over feature groups chosen by grouped CV (the "
    "states reading and predicting the draft token, the free rules' scores, token classes; train.context)",
    "selfjudge": "SelfJudge: semantic-preservation labels, logistic-regression head",
    "fsd-js": "FSD (fuzzy speculative decoding), match-or variant: accept on a match or JS < T",
    "fsd-kl": "FSD, match-or variant: accept on a match or KL < T",
    "fsd-tv": "FSD, match-or variant: accept on a match or TV < T",
    **{
        f"fsd-{d}-published": f"FSD as published: accept iff {d.upper()} < T, a match included (greedy: the "
        "match-or variant's tokens at the same T, with no more tokens per pass)"
        for d in ("js", "kl", "tv")
    },
    "kl-mask": "training-free judge decoding via KL: KL < T, exact where the target's top-1 p > confidence",
    "target-entropy": "entropy baseline of the KL paper: accept when the target's entropy > T",
    "draft-entropy": "entropy baseline of the KL paper: accept when the draft's entropy > T",
    "fly": "FLy (loosely speculative decoding, ICLR 2026): top-K entropy gate and deferred window",
    "topk": "accept a draft token among the target's top K",
    "exact": "lossless speculative decoding (greedy)",
}
COST = {"exact": 0, **dict.fromkeys(RULES, 1), **dict.fromkeys(HEADS, 2)}  # 2: needs mining and training
MIN_COMPETENCE = 0.5  # target greedy accuracy below this: the split cannot rank methods


def best_within(rows: list[dict], method: str, target_accuracy: float, budget: float) -> dict | None:
    """The row of ``method`` with the highest MAT whose accuracy drop vs target is <= budget."""
    eligible = [r for r in rows if r["method"] == method and target_accuracy - r["accuracy"] <= budget + 1e-9]
    return max(eligible, key=lambda r: r["mat"], default=None)


def budget_key(budget: float) -> str:
    return f"{100 * budget:g}"


def choose_points(
    rows: list[dict], budgets: list[float], stopped: Sequence[dict] = ()
) -> dict[str, dict[str, str | None]]:
    """budget -> method -> the setting chosen on the validation ``rows`` (None: no candidate within). A
    method whose every probe the early stop cut (``stopped`` rows only) is listed too, with no point."""
    target_accuracy = next(r["accuracy"] for r in rows if r["method"] == "target")
    methods = [m for m in LABELS if any(r["method"] == m for r in [*rows, *stopped])]
    chosen = {}
    for budget in budgets:
        best = {m: best_within(rows, m, target_accuracy, budget) for m in methods}
        chosen[budget_key(budget)] = {m: row and row["setting"] for m, row in best.items()}
    return chosen


def chosen_settings(candidates: list[Setting], chosen: dict[str, dict[str, str | None]]) -> list[Setting]:
    """The candidates chosen at any budget, once each, exact SD, then target greedy: what each test split
    decodes."""
    names = {name for by_method in chosen.values() for name in by_method.values() if name}
    picked = [s for s in candidates if s.method == "exact" or (s.name in names and s.method != "target")]
    return [*picked, Setting("target")]


def _interval(point_low_high: tuple[float, float, float]) -> dict[str, float]:
    point, low, high = point_low_high
    return {"value": point, "low": low, "high": high}


def _at_edge(validation: dict[str, dict], method: str, name: str) -> bool:
    """Whether ``name`` is its method's highest-rate candidate on validation below rate 1: nothing decoded
    above it shows where the method starts to lose (the rate search brackets every chosen point)."""
    rates = [row["rate"] for row in validation.values() if row.get("method") == method and row.get("rate")]
    rate = validation[name].get("rate")
    return bool(rates) and rate == max(rates) and rate < 1


def _rates(figures: list[ProblemFigures]) -> list[tuple[int, int]]:
    return [(p.tokens, p.target_passes) for p in figures]


def mat_ratio(a: list[ProblemFigures], b: list[ProblemFigures], samples: int, seed: int) -> dict[str, float]:
    """MAT of ``a`` over MAT of ``b`` on the same problems, with its 95% paired-bootstrap interval."""
    return _interval(paired_bootstrap(_rates(a), _rates(b), rate_ratio, samples, seed))


def accuracy_drop(
    reference: list[ProblemFigures], decoded: list[ProblemFigures], samples: int, seed: int
) -> dict[str, float]:
    """Accuracy of ``reference`` minus that of ``decoded`` on the same problems, with its 95% interval."""
    correct = [[p.correct for p in figures] for figures in (reference, decoded)]
    return _interval(paired_bootstrap(*correct, mean_difference, samples, seed))


def split_table(
    chosen: dict[str, dict[str, str | None]],
    figures: dict[str, list[ProblemFigures]],
    validation: dict[str, dict],
    samples: int,
    seed: int,
) -> dict:
    """One test split: per budget and method, the chosen setting's test accuracy and MAT, its accuracy
    drop vs target greedy and MAT gain over exact SD with intervals, and whether it kept the budget.

    ``figures``: setting name -> per-problem figures on this split; ``validation``: setting name -> its
    validation row (what chose it)."""
    target = figures[Setting("target").name]
    target_accuracy = sum(p.correct for p in target) / len(target)
    exact = next(figures[name] for name in figures if name.startswith("exact SD"))
    table: dict[str, dict[str, dict | None]] = {}
    for budget, by_method in chosen.items():
        for method, name in by_method.items():
            if method == "target":
                continue
            entry = None
            if name is not None:
                decoded = figures[name]
                drop = accuracy_drop(target, decoded, samples, seed)
                entry = {
                    "setting": name,
                    "grid_edge": _at_edge(validation, method, name),
                    "validation_accuracy": validation[name]["accuracy"],
                    "validation_mat": validation[name]["mat"],
                    "accuracy": sum(p.correct for p in decoded) / len(decoded),
                    "mat": sum(p.tokens for p in decoded) / sum(p.target_passes for p in decoded),
                    "accuracy_drop": drop,
                    "mat_gain_vs_exact_sd": mat_ratio(decoded, exact, samples, seed),
                    "within_budget": drop["value"] <= float(budget) / 100 + 1e-9,
                }
            table.setdefault(method, {})[budget] = entry
    return {"examples": len(target), "target_accuracy": target_accuracy, "table": table}


def decision(
    split: dict, budget: str, figures: dict[str, list[ProblemFigures]], samples: int, seed: int
) -> dict:
    """The verdict at ``budget`` on one test split, from intervals.

    Among the methods within the budget on this split, ranked by MAT, the fastest is the winner only
    when the interval of its MAT ratio over the runner-up excludes 1; otherwise there is no significant
    difference, and the recommendation is the cheapest method (exact SD, then training-free rules, then
    heads) whose MAT is not significantly below the fastest. A split where target greedy is below
    ``MIN_COMPETENCE`` ranks nothing. ``head_vs_best_rule``: the AutoJudge head's MAT ratio over the
    fastest training-free rule within the budget (the promotion gate's figure).
    """
    verdict: dict = {"budget_points": budget, "winner": None, "target_accuracy": split["target_accuracy"]}
    if split["target_accuracy"] < MIN_COMPETENCE:
        return {**verdict, "outside_competence": True}
    within = {
        m: by[budget] for m, by in split["table"].items() if by.get(budget) and by[budget]["within_budget"]
    }
    ranked = sorted(within, key=lambda m: (-within[m]["mat"], COST[m]))
    if not ranked:
        return verdict
    fastest = ranked[0]

    def ratio(a: str, b: str) -> dict[str, float]:
        return mat_ratio(figures[within[a]["setting"]], figures[within[b]["setting"]], samples, seed)

    versus = {m: ratio(fastest, m) for m in ranked[1:]}  # the fastest over each other method
    tied = [fastest, *(m for m in ranked[1:] if versus[m]["low"] <= 1.0)]
    recommended = min(tied, key=lambda m: (COST[m], -within[m]["mat"]))
    runner_up = ranked[1] if len(ranked) > 1 else None
    significant = runner_up is None or versus[runner_up]["low"] > 1.0
    rules = [m for m in ranked if m in RULES]
    best_rule = {"method": rules[0], "setting": within[rules[0]]["setting"]} if rules else None
    head_vs_rule = None
    if "judge" in within and rules:
        head_vs_rule = {"rule": rules[0], "setting": within[rules[0]]["setting"], **ratio("judge", rules[0])}
    return {
        **verdict,
        "winner": fastest if significant else None,
        "fastest": fastest,
        "setting": within[fastest]["setting"],
        "mat": within[fastest]["mat"],
        "runner_up": runner_up,
        "ratio_vs_runner_up": versus.get(runner_up) if runner_up else None,
        "recommended": recommended,
        "recommended_setting": within[recommended]["setting"],
        "best_rule": best_rule,
        "head_within_budget": "judge" in within,
        "head_vs_best_rule": head_vs_rule,
    }


def _ratio_text(entry: dict) -> str:
    return f"{entry['value']:.2f}x [{entry['low']:.2f}, {entry['high']:.2f}]"


def decision_sentence(verdict: dict, split: str) -> str:
    budget = verdict["budget_points"]
    if verdict.get("outside_competence"):
        return (
            f"On the {split} split the target answers {100 * verdict['target_accuracy']:.1f}% correctly, below "
            f"{100 * MIN_COMPETENCE:.0f}%: outside its competence, so no method is ranked there."
        )
    if "fastest" not in verdict:
        return f"On the {split} split no method stays within {budget} point(s) of the target."
    fastest, runner = verdict["fastest"], verdict["runner_up"]
    versus = (
        f"; MAT ratio over {LABELS[runner]} {_ratio_text(verdict['ratio_vs_runner_up'])}" if runner else ""
    )
    if verdict["winner"]:
        return (
            f"Within {budget} point(s) on the {split} split: **{LABELS[fastest]} wins** "
            f"({verdict['setting']}, MAT {verdict['mat']:.2f}{versus})."
        )
    return (
        f"Within {budget} point(s) on the {split} split: **no significant difference** between the fastest, "
        f"{LABELS[fastest]} (MAT {verdict['mat']:.2f}{versus}), and the runner-up; recommended: "
        f"**{LABELS[verdict['recommended']]}** ({verdict['recommended_setting']}), the cheapest method not "
        "significantly slower than the fastest."
    )


def _points(entry: dict) -> str:
    return f"{100 * entry['value']:+.1f} [{100 * entry['low']:+.1f}, {100 * entry['high']:+.1f}]"


def budget_table(split: dict, budget: str) -> str:
    """One split at one budget: each method's chosen point, its test figures and intervals."""
    lines = [
        "| method | chosen on validation | validation MAT | accuracy | drop vs target, points [95% CI] "
        "| MAT | MAT vs exact SD [95% CI] | within budget |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for method, by_budget in split["table"].items():
        entry = by_budget.get(budget)
        if entry is None:
            lines.append(f"| {LABELS[method]} | none within the budget | | | | | | |")
            continue
        edge = " (grid edge)" if entry.get("grid_edge") else ""
        lines.append(
            f"| {LABELS[method]} | {entry['setting']}{edge} | {entry['validation_mat']:.2f} "
            f"| {100 * entry['accuracy']:.1f}% | {_points(entry['accuracy_drop'])} | {entry['mat']:.2f} "
            f"| {_ratio_text(entry['mat_gain_vs_exact_sd'])} | {'yes' if entry['within_budget'] else 'no'} |"
        )
    return "\n".join(lines)


def _share_text(share: float | None) -> str:
    return "n/a" if share is None else f"{100 * share:.1f}%"


def ceiling_markdown(section: dict) -> str:
    """The ceiling (:mod:`autojudge.evaluation.comparison_ceiling`), every chosen point's share of it and its
    acceptance of the labelled mismatches, as a table."""
    tests = list(section["points"][0]["share_of_ceiling"]) if section["points"] else []
    fraction = section["important_fraction"]
    important = f", {_share_text(fraction['value'])}" if fraction else ""
    lines = [
        f"### The ceiling: a perfect judge on {section['problems']} {section['split']} problems\n",
        "The judge that accepts exactly Algorithm 1's unimportant mismatches (no accuracy lost), replayed at "
        f"W={section['window']} over the first {section['problems']} problems of the {section['split']} split "
        f"mined ({section['important']} of {section['mismatches']} mismatches important{important}): MAT "
        f"{section['ceiling_mat']['value']:.2f} against exact SD's {section['exact_mat']['value']:.2f}, "
        f"**{_ratio_text(section['ratio'])}**. *Share*: (the chosen point's MAT ratio over exact SD on the test "
        "split - 1) / (the ceiling's - 1). *Accepted*: its share of the labelled important and unimportant "
        "mismatches, teacher-forced along the mined responses (FLy: its entropy gate alone).\n",
        "| method | chosen point (budgets) | "
        + "".join(f"MAT vs exact SD, {test} | share, {test} | " for test in tests)
        + "important accepted | unimportant accepted |",
        "|---|---|" + "---:|---:|" * len(tests) + "---:|---:|",
    ]
    for point in section["points"]:
        per_split = "".join(
            f"{_ratio_text(point['mat_gain_vs_exact_sd'][test])} | {_share_text(point['share_of_ceiling'][test])} | "
            for test in tests
        )
        accepted = point["accepted"]
        lines.append(
            f"| {LABELS[point['method']]} | {point['setting']} ({', '.join(point['budgets'])}) | {per_split}"
            f"{_share_text(accepted['important'])} | {_share_text(accepted['unimportant'])} |"
        )
    return "\n".join(lines)


def ceiling_sentence(section: dict, budget: str) -> str | None:
    """The AutoJudge head's point at ``budget`` against the ceiling, in one sentence (None: not chosen)."""
    point = next((p for p in section["points"] if p["method"] == "judge" and budget in p["budgets"]), None)
    if point is None:
        return None
    shares = ", ".join(f"{_share_text(share)} on {test}" for test, share in point["share_of_ceiling"].items())
    return (
        f"Against the ceiling (a perfect judge, {_ratio_text(section['ratio'])} exact SD's MAT on "
        f"{section['problems']} {section['split']} problems), this head's point within {budget} point(s) "
        f"reaches {shares} of the gain, accepting {_share_text(point['accepted']['important'])} of the "
        f"important and {_share_text(point['accepted']['unimportant'])} of the unimportant mismatches."
    )


def markdown(comparison: dict) -> str:
    """The tables for the card and the README: per test split and budget, every method's chosen point."""
    protocol = comparison["protocol"]
    parts = [
        f"Operating points chosen on the first {protocol['validation_examples']} problems of the "
        f"{protocol['validation_split']} split (each method's acceptance rate of the validation mismatches "
        f"searched per budget by bisection over {', '.join(f'{r:g}' for r in protocol['rates'])} and "
        f"{protocol.get('refine', 0)} midpoint(s) in the final bracket, W={protocol['window']}: the highest "
        "validation MAT within the budget; *grid edge*: nothing decoded above it, below rate 1), then decoded "
        "once on the test split; 95% paired-bootstrap intervals over problems."
    ]
    for split, figures in comparison["splits"].items():
        for budget in comparison["budgets"]:
            parts.append(
                f"### {split} split ({figures['examples']} problems, target greedy "
                f"{100 * figures['target_accuracy']:.1f}%): budget {budget} point(s)\n\n"
                f"{budget_table(figures, budget)}\n\n"
                f"{decision_sentence(comparison['decisions'][split][budget], split)}"
            )
    if "ceiling" in comparison:
        parts.append(ceiling_markdown(comparison["ceiling"]))
    methods = [m for m in LABELS if any(m in s["table"] for s in comparison["splits"].values())]
    parts.append("Methods: " + "; ".join(f"{LABELS[m]}: {SOURCES[m]}" for m in methods) + ".")
    if "serving" in comparison:
        parts.append(serving.markdown(comparison["serving"]))
    return "\n\n".join(parts)
