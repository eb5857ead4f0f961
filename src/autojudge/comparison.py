"""Comparing every acceptance rule and judge head: which reaches the highest MAT within an accuracy budget.

The budget is an accuracy drop against target-only greedy decoding on the same problems; a
method's figure is its best MAT over the thresholds swept whose accuracy stays within it.
"""

from __future__ import annotations

from autojudge.decoding.training_free import TRAINING_FREE
from autojudge.errors import InputError
from autojudge.heads.artifact import JudgeHead
from autojudge.sweep import Setting

HEADS = ("judge", "selfjudge")
RULES = (*TRAINING_FREE, "topk")  # need no mining or training
LABELS = {
    "judge": "AutoJudge head",
    "selfjudge": "SelfJudge head",
    "fsd-js": "FSD (JS)",
    "fsd-kl": "FSD (KL)",
    "fsd-tv": "FSD (TV)",
    "kl-mask": "KL + confidence mask",
    "target-entropy": "target entropy",
    "draft-entropy": "draft entropy",
    "fly": "FLy",
    "topk": "top-K",
    "exact": "exact SD",
}


def head_thresholds(head: JudgeHead, recalls: list[float]) -> list[tuple[float | None, float]]:
    """(recall, threshold) pairs of the head for the requested validation recalls, then its own
    chosen threshold (recall ``None``) unless one of them already is it."""
    stored = {round(float(r), 6): t for r, t in head.info.get("thresholds_by_recall", {}).items()}
    missing = [r for r in recalls if round(r, 6) not in stored]
    if missing:
        raise InputError(
            f"compare.recalls {missing} have no head threshold; the head has {sorted(stored)} (evaluate.recalls)"
        )
    pairs: list[tuple[float | None, float]] = [(r, stored[round(r, 6)]) for r in recalls]
    if all(abs(t - head.threshold) > 1e-12 for _, t in pairs):
        pairs.append((None, head.threshold))
    return pairs


def comparison_settings(
    window: int,
    heads: dict[str, JudgeHead],
    recalls: list[float],
    topk: list[int],
    thresholds: dict[str, list[float]],
) -> list[Setting]:
    """Every setting of the comparison: each head's recall thresholds and its own, each rule's sweep,
    the baselines."""
    unknown = sorted(set(thresholds) - set(TRAINING_FREE))
    if unknown:
        raise InputError(f"compare.thresholds: unknown rules {unknown}; known: {', '.join(TRAINING_FREE)}")
    settings = [
        Setting(method, window, threshold=t, recall=r)
        for method, head in heads.items()
        for r, t in head_thresholds(head, recalls)
    ]
    settings += [
        Setting(method, window, threshold=t) for method in TRAINING_FREE for t in thresholds.get(method, [])
    ]
    settings += [Setting("topk", window, k=k) for k in topk]
    return [*settings, Setting("exact", window), Setting("target")]


MIN_COMPETENCE = 0.5  # target greedy accuracy below this: the split cannot rank methods


def best_within(rows: list[dict], method: str, target_accuracy: float, budget: float) -> dict | None:
    """The row of ``method`` with the highest MAT whose accuracy drop vs target is <= budget."""
    eligible = [r for r in rows if r["method"] == method and target_accuracy - r["accuracy"] <= budget + 1e-9]
    return max(eligible, key=lambda r: r["mat"], default=None)


def budget_key(budget: float) -> str:
    return f"{100 * budget:g}"


def split_table(rows: list[dict], budgets: list[float]) -> dict:
    """For one split: the target's accuracy and, per method and budget, the best setting within it."""
    target_accuracy = next(r["accuracy"] for r in rows if r["method"] == "target")
    methods = [m for m in LABELS if any(r["method"] == m for r in rows)]
    table = {}
    for method in methods:
        table[method] = {}
        for budget in budgets:
            best = best_within(rows, method, target_accuracy, budget)
            table[method][budget_key(budget)] = (
                None if best is None else {k: best[k] for k in ("setting", "accuracy", "mat")}
            )
    return {"target_accuracy": target_accuracy, "table": table}


def _mat(entry: dict | None) -> float:
    return entry["mat"] if entry else 0.0


def head_versus_rules(
    table: dict, budget: str, head: str = "judge"
) -> tuple[dict | None, str | None, dict | None]:
    """The head's best entry at ``budget`` and the best training-free rule (name, entry) at the same budget."""
    rules = [(m, table[m][budget]) for m in RULES if m in table and table[m].get(budget)]
    name, entry = max(rules, key=lambda item: _mat(item[1]), default=(None, None))
    return table.get(head, {}).get(budget), name, entry


def decision(table: dict, budget: str, target_accuracy: float) -> dict:
    """The winner at ``budget``: its MAT, the runner-up's, and the gain over it and over exact SD.

    A split the target mostly gets wrong (below ``MIN_COMPETENCE``) ranks nothing: every method is
    "within budget" of a target that is wrong anyway, so there is no winner there.
    """
    if target_accuracy < MIN_COMPETENCE:
        return {
            "budget_points": budget,
            "winner": None,
            "outside_competence": True,
            "target_accuracy": target_accuracy,
        }
    ranked = sorted(
        ((m, e) for m, by in table.items() if m != "target" and (e := by.get(budget))),
        key=lambda item: -item[1]["mat"],
    )
    if not ranked:
        return {"budget_points": budget, "winner": None}
    (winner, best), runner = ranked[0], (ranked[1] if len(ranked) > 1 else (None, None))
    exact = table.get("exact", {}).get(budget)
    return {
        "budget_points": budget,
        "winner": winner,
        "setting": best["setting"],
        "mat": best["mat"],
        "accuracy": best["accuracy"],
        "runner_up": runner[0],
        "runner_up_mat": runner[1]["mat"] if runner[1] else None,
        "gain_vs_runner_up": best["mat"] / runner[1]["mat"] if runner[1] else None,
        "gain_vs_exact_sd": best["mat"] / exact["mat"] if exact else None,
    }


def decision_sentence(verdict: dict, split: str) -> str:
    if verdict.get("outside_competence"):
        return (
            f"On the {split} split the target answers {100 * verdict['target_accuracy']:.1f}% correctly, below "
            f"{100 * MIN_COMPETENCE:.0f}%: outside its competence, so no method is ranked there."
        )
    if verdict["winner"] is None:
        return f"On the {split} split no method stays within {verdict['budget_points']} points of the target."
    sentence = (
        f"On the {split} split, within {verdict['budget_points']} point(s) of the target's accuracy, "
        f"**{LABELS[verdict['winner']]}** wins ({verdict['setting']}): MAT {verdict['mat']:.2f}"
    )
    if verdict["runner_up"]:
        sentence += (
            f", {100 * (verdict['gain_vs_runner_up'] - 1):.1f}% above the runner-up "
            f"{LABELS[verdict['runner_up']]} (MAT {verdict['runner_up_mat']:.2f})"
        )
    if verdict["gain_vs_exact_sd"]:
        sentence += f", {verdict['gain_vs_exact_sd']:.2f}x exact SD"
    return sentence + "."


def markdown(comparison: dict) -> str:
    """The table for the card and the README: per split and method, the best MAT within each budget."""
    budgets = comparison["budgets"]
    splits = list(comparison["splits"])
    header = "| method | " + " | ".join(f"{s}: MAT @ <= {b} pt" for s in splits for b in budgets) + " |"
    lines = [header, "|---|" + "---:|" * (len(splits) * len(budgets))]
    methods = [m for m in LABELS if any(m in comparison["splits"][s]["table"] for s in splits)]
    for method in methods:
        cells = []
        for split in splits:
            for budget in budgets:
                entry = comparison["splits"][split]["table"].get(method, {}).get(budget)
                cells.append(f"{entry['mat']:.2f}" if entry else "-")
        lines.append(f"| {LABELS[method]} | " + " | ".join(cells) + " |")
    accuracies = ", ".join(f"{s} {100 * comparison['splits'][s]['target_accuracy']:.1f}%" for s in splits)
    lines += ["", f"Target greedy accuracy (the budgets' reference): {accuracies}."]
    lines += [decision_sentence(comparison["decisions"][s], s) for s in splits]
    return "\n".join(lines)
