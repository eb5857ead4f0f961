"""The verdicts of the product's three pairs side by side (issue 38, item 4): the toy pair, the fine-tuned
SmolLM2 target with its weak distilled draft, and the same target with its EAGLE head.

Every figure is read from a pair's committed outputs (its ``metrics/``, as its ``dvc repro`` wrote them):
the toy pair's at the repository root, each real preset's under ``results/<preset>/``; a pair whose outputs
are not committed yet gets a column saying so, and a stage not run yet (sampled, bench) a cell. Run from the repository root::

    python results/pairs/pairs.py          # writes results/pairs/pairs.md (the README shows its table)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from autojudge.evaluation.comparison import LABELS

OUT = Path("results/pairs/pairs.md")
NOT_RUN = "not run yet"


@dataclass(frozen=True)
class Pair:
    title: str  # the column's heading
    root: Path  # where its metrics/ are
    proposer: str
    agreement: tuple[str, str]  # file under root (or the repository) and its key: teacher-forced agreement


PAIRS = (
    Pair("toy pair", Path(), "draft model (toy)", ("models/toy_mixed/quality.json", "arith")),
    Pair(
        "SmolLM2, distilled draft",
        Path("results/smollm2-arith"),
        "draft model (4 of 30 layers)",
        ("metrics/distill/smollm2-arith.json", "agreement"),
    ),
    Pair(
        "SmolLM2, EAGLE head",
        Path("results/smollm2-eagle"),
        "EAGLE head (1 layer)",
        ("metrics/eagle/smollm2-arith.json", "held_out_agreement"),
    ),
)


def _read(path: Path) -> dict:
    return json.loads(path.read_text())


def _read_if_run(path: Path) -> dict | None:
    """A stage's metrics, or None where the stage has not run yet."""
    return _read(path) if path.is_file() else None


def _interval(entry: dict | None, scale: float = 1.0, unit: str = "", signed: bool = False) -> str:
    if not entry:
        return "-"
    sign = "+" if signed else ""
    value, low, high = (scale * entry[k] for k in ("value", "low", "high"))
    return f"{value:{sign}.2f}{unit} [{low:{sign}.2f}, {high:{sign}.2f}]"


def _agreement(pair: Pair) -> str:
    path, key = pair.agreement
    if path.startswith("models/"):  # the toy pair's measurement of its sources
        return f"{_read(Path(path))['sources'][key]['teacher_forced_agreement']:.1%}"
    return f"{_read(pair.root / path)[key]:.1%}"


def _draft_alone(metrics: Path) -> str:
    rows = [row for row in _read(metrics / "arith" / "evaluate.json")["settings"] if row["method"] == "draft"]
    return f"{rows[0]['accuracy']:.1%}" if rows else "- (a head has no output of its own)"


def _method(entry: dict | None) -> str:
    """A method's point for one budget on test: MAT ratio and drop, or why there is none."""
    if not entry:
        return "no point within the budget on validation"
    mark = "" if entry["within_budget"] else " (over)"
    return (
        f"{_interval(entry['mat_gain_vs_exact_sd'], unit='x')}, "
        f"{_interval(entry['accuracy_drop'], 100, signed=True)}{mark}"
    )


def _verdict(decision: dict) -> str:
    if decision.get("outside_competence"):
        return "outside the target's competence"
    if "fastest" not in decision:
        return "no method within the budget"
    if decision["winner"]:
        return f"**{LABELS[decision['winner']]}**"
    return f"no significant difference (recommended: {LABELS[decision['recommended']]})"


def _recommendation_speed(metrics: Path, budget: str) -> str:
    report = _read_if_run(metrics / "bench.json")
    if report is None:
        return NOT_RUN
    for name, info in report.get("recommendations", {}).items():
        if budget in info["budgets_points"]:
            setting, stock = report["settings"][name], report["settings"]["sd_stock"]
            ratio = setting["speedup_vs_stock_bs1"]
            windows = f"W={setting['windows']['1']} vs W={stock['windows']['1']}"
            return f"{ratio['point']:.2f}x [{ratio['low']:.2f}, {ratio['high']:.2f}] ({info['method']}, {windows})"
    return "- (not timed)"


def _sampled(metrics: Path, budget: str, compare: dict) -> str:
    sampled = _read_if_run(metrics / "sampled.json")
    if sampled is None:
        return NOT_RUN
    setting = compare["decisions"]["test"][budget].get("recommended_setting")
    figures = sampled["splits"]["test"]["methods"].get(setting or "")
    if not figures or "accuracy_drop" not in figures:
        return "-"
    drop = _interval(figures["accuracy_drop"], 100, signed=True)
    return f"MAT {_interval(figures['mat_gain_vs_exact_sd'], unit='x')}, drop {drop} pt"


def column(pair: Pair) -> dict[str, str]:
    """One pair's figures, by row name."""
    metrics = pair.root / "metrics"
    if not (metrics / "arith" / "compare.json").is_file():
        return {}
    compare = _read(metrics / "arith" / "compare.json")
    mining, train = _read(metrics / "arith" / "mining.json"), _read(metrics / "arith" / "train.json")
    test = compare["splits"]["test"]
    rows = {
        "proposer": pair.proposer,
        "teacher-forced agreement with the target": _agreement(pair),
        "draft alone (arith test)": _draft_alone(metrics),
        "target alone (compare's test split)": f"{test['target_accuracy']:.1%} of {test['examples']}",
        "problems: mined / validation / test": (
            f"{mining['problems']} / {compare['protocol']['validation_examples']} / {test['examples']}"
        ),
        "important mismatches (Algorithm 1)": f"{mining['important_fraction']:.1%} of {mining['mismatches']}",
        "head ROC-AUC (validation)": f"{train['validation_auc']:.3f}",
    }
    # a comparison made before stopped-only methods were listed (every probe cut) leaves them out of its table
    cut = {row["method"]: {} for row in compare.get("stopped", []) if row["method"] not in test["table"]}
    for budget in compare["budgets"]:
        for method, by_budget in {**test["table"], **cut}.items():
            if method != "exact":
                rows[f"{LABELS[method]} within {budget} pt: MAT x, drop pt"] = _method(by_budget.get(budget))
        decision = compare["decisions"]["test"][budget]
        rows[f"verdict within {budget} pt"] = _verdict(decision)
        rows[f"recommendation within {budget} pt: vLLM tokens/s vs stock SD, bs 1 (windows)"] = (
            _recommendation_speed(metrics, budget)
        )
        rows[f"recommendation within {budget} pt, sampled T = 0.7"] = _sampled(metrics, budget, compare)
    return rows


def table(pairs: tuple[Pair, ...] = PAIRS) -> str:
    """The markdown table: one row per figure, one column per pair."""
    columns = [column(pair) for pair in pairs]
    names = list(dict.fromkeys(name for col in columns for name in col))
    lines = [
        "| | " + " | ".join(pair.title for pair in pairs) + " |",
        "|---|" + "---|" * len(pairs),
        "| outputs | " + " | ".join(f"`{pair.root}/metrics`" for pair in pairs) + " |",
    ]
    for name in names:
        cells = [col.get(name, "-") if col else NOT_RUN for col in columns]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    OUT.write_text(
        "# Three pairs side by side\n\nWritten by `python results/pairs/pairs.py` from each pair's committed "
        "outputs. MAT x: MAT over exact SD's on the test split; drop: accuracy points lost against the target "
        "(negative: gained); 95% paired-bootstrap intervals; (over): the point chosen on validation lost more "
        "than the budget on test.\n\n" + table()
    )
    print(OUT.read_text())
