"""The product's three pairs side by side: the toy pair, the fine-tuned SmolLM2 target with its distilled
draft, and the same target with its EAGLE head, each read from its committed ``metrics/`` (the toy pair's at
the repository root, each real preset's under ``results/<preset>/``).

Blocks: ``pairs-summary`` (the README's table: one row per pair) and ``pairs-methods`` (every method of each
pair's comparison, as its compare.json lists them, at each budget).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autojudge.evaluation.comparison import LABELS

from .blocks import writer
from .sources import exists, interval, link, load, lookup, percent

NOT_RUN = "not run yet"
CEILINGS = Path("results/ceiling/ceiling.json")


@dataclass(frozen=True)
class Agreement:
    """Teacher-forced agreement of the proposer with the target: where it is and what it was measured on."""

    file: str
    key: str
    problems: tuple[str, str]  # committed file and key: how many problems
    on: str  # on what, in words after the count


@dataclass(frozen=True)
class Pair:
    title: str  # a column's heading, a row's name
    root: Path  # where its metrics/ are
    proposer: str
    agreement: Agreement
    ceiling_record: str  # its row of results/ceiling/ceiling.json, for a comparison without its own ceiling

    @property
    def metrics(self) -> Path:
        return self.root / "metrics"

    def compared(self) -> bool:
        return exists(self.metrics / "arith" / "compare.json")

    def read(self, name: str) -> dict | None:
        """One of the pair's metrics files, or None where its stage has not run yet."""
        path = self.metrics / name
        return load(path) if exists(path) else None


PAIRS = (
    Pair(
        "toy pair",
        Path(),
        "draft model (toy)",
        Agreement(
            "models/toy_mixed/quality.json",
            "sources/arith/teacher_forced_agreement",
            ("models/toy_mixed/quality.json", "sources/arith/examples"),
            "arith test problems",
        ),
        "toy pair, arith",
    ),
    Pair(
        "SmolLM2, distilled draft",
        Path("results/smollm2-arith"),
        "draft model (4 of 30 layers)",
        Agreement(
            "results/smollm2-arith/metrics/distill/smollm2-arith.json",
            "agreement",
            ("results/smollm2-arith/params.yaml", "distill/smollm2-arith/eval_problems"),
            "test prompts",
        ),
        "SmolLM2-arith, distilled draft",
    ),
    Pair(
        "SmolLM2, EAGLE head",
        Path("results/smollm2-eagle"),
        "EAGLE head (1 layer)",
        Agreement(
            "results/smollm2-eagle/metrics/eagle/smollm2-arith.json",
            "held_out_agreement",
            ("results/smollm2-eagle/params.yaml", "eagle/smollm2-arith/eval_problems"),
            "validation problems, which also chose the training step",
        ),
        "SmolLM2-arith, EAGLE head",
    ),
)


def label(method: str) -> str:
    return LABELS.get(method, method)


def agreement(pair: Pair) -> str:
    spec = pair.agreement
    problems = lookup(load(spec.problems[0]), spec.problems[1])
    return f"{percent(lookup(load(spec.file), spec.key))} on {problems} {spec.on}"


def ceiling(pair: Pair, page: Path) -> str:
    """A perfect judge's MAT over exact SD's: the comparison's own ceiling where it has one, else the pair's
    row of results/ceiling/, each with what it was measured on."""
    compare = pair.read("arith/compare.json") or {}
    source = pair.metrics / "arith" / "compare.json"
    if "ceiling" in compare:
        entry = compare["ceiling"]
        on = f"{entry['problems']} {entry['split']} problems"
        window = entry["window"]
    else:
        window = compare["protocol"]["window"]
        record = load(CEILINGS)["records"][pair.ceiling_record]
        entry = record["windows"][str(window)]
        on = f"{record['problems']} training problems no proposer saw"
        source = CEILINGS
    return f"{interval(entry['ratio'], unit='x')} (W = {window}, {on}; [{source.name}]({link(page, source)}))"


def draft_alone(pair: Pair) -> str:
    rows = [row for row in pair.read("arith/evaluate.json")["settings"] if row["method"] == "draft"]
    if not rows:
        return "- (a head has no output of its own)"
    return f"{percent(rows[0]['accuracy'])} of {rows[0]['examples']}"


def point(entry: dict | None) -> str:
    """A method's point for one budget on test: MAT ratio and drop, or why there is none."""
    if not entry:
        return "no point within the budget on validation"
    mark = "" if entry["within_budget"] else " (over)"
    return (
        f"{interval(entry['mat_gain_vs_exact_sd'], unit='x')}, "
        f"{interval(entry['accuracy_drop'], 100, signed=True)}{mark}"
    )


def verdict(decision: dict) -> str:
    if decision.get("outside_competence"):
        return "outside the target's competence"
    if "fastest" not in decision:
        return "no method within the budget"
    if decision["winner"]:
        return f"**{label(decision['winner'])}** wins"
    return f"no significant difference; **{label(decision['recommended'])}** recommended"


def served(pair: Pair, budget: str) -> tuple[dict, dict, dict] | None:
    """The benchmark's figures for the budget's recommendation: (its setting, its recommendation entry, the
    lossless control's setting), or None where the benchmark has not run or did not time it."""
    bench = pair.read("bench.json")
    if bench is None:
        return None
    control = bench.get("control", {}).get("setting", "sd_exact")  # plugin exact SD before `control` existed
    for name, info in bench.get("recommendations", {}).items():
        if budget in info["budgets_points"]:
            return bench["settings"][name], info, bench["settings"][control]
    return None


def speed(pair: Pair, budget: str, versus: str) -> str:
    """The recommendation's tokens/s at batch size 1 over stock SD's (``stock``) or the control's (``control``)."""
    if pair.read("bench.json") is None:
        return NOT_RUN
    found = served(pair, budget)
    if found is None:
        return "- (not timed)"
    setting, info, control = found
    key = "speedup_vs_stock_bs1" if versus == "stock" else "speedup_vs_exact_bs1"
    other = pair.read("bench.json")["settings"]["sd_stock"] if versus == "stock" else control
    windows = f"W={setting['windows']['1']} vs W={other['windows']['1']}"
    return f"{interval(setting[key], unit='x')} ({info['method']}, {windows})"


def sampled(pair: Pair, budget: str, compare: dict) -> str:
    figures = pair.read("sampled.json")
    if figures is None:
        return NOT_RUN
    setting = compare["decisions"]["test"][budget].get("recommended_setting")
    methods = figures["splits"]["test"]["methods"].get(setting or "")
    if not methods or "accuracy_drop" not in methods:
        return "-"
    drop = interval(methods["accuracy_drop"], 100, signed=True)
    return f"MAT {interval(methods['mat_gain_vs_exact_sd'], unit='x')}, drop {drop} pt"


def column(pair: Pair, page: Path) -> dict[str, str]:
    """One pair's figures, by row name."""
    if not pair.compared():
        return {}
    compare = pair.read("arith/compare.json")
    mining, train = pair.read("arith/mining.json"), pair.read("arith/train.json")
    test = compare["splits"]["test"]
    rows = {
        "proposer": pair.proposer,
        "teacher-forced agreement with the target": agreement(pair),
        "draft alone (arith test)": draft_alone(pair),
        "target alone (compare's test split)": f"{percent(test['target_accuracy'])} of {test['examples']}",
        "problems: mined / validation / test": (
            f"{mining['problems']} / {compare['protocol']['validation_examples']} / {test['examples']}"
        ),
        "important mismatches (Algorithm 1)": f"{percent(mining['important_fraction'])} of {mining['mismatches']}",
        "head ROC-AUC (validation)": f"{train['validation_auc']:.3f}",
        "a perfect judge: MAT x": ceiling(pair, page),
    }
    # a comparison made before stopped-only methods were listed (every probe cut) leaves them out of its table
    cut = {row["method"]: {} for row in compare.get("stopped", []) if row["method"] not in test["table"]}
    for budget in compare["budgets"]:
        for method, by_budget in {**test["table"], **cut}.items():
            if method != "exact":
                rows[f"{label(method)} within {budget} pt: MAT x, drop pt"] = point(by_budget.get(budget))
        rows[f"verdict within {budget} pt"] = verdict(compare["decisions"]["test"][budget])
        for versus, what in (("stock", "stock SD"), ("control", "the lossless control (plugin exact SD)")):
            name = f"recommendation within {budget} pt: vLLM tokens/s vs {what}, bs 1"
            rows[name] = speed(pair, budget, versus)
        rows[f"recommendation within {budget} pt, sampled T = 0.7"] = sampled(pair, budget, compare)
    return rows


@writer("pairs-methods")
def methods_table(page: Path) -> str:
    """Every figure of the three pairs: one row per figure, one column per pair."""
    columns = [column(pair, page) for pair in PAIRS]
    names = list(dict.fromkeys(name for col in columns for name in col))
    lines = [
        "| | " + " | ".join(pair.title for pair in PAIRS) + " |",
        "|---|" + "---|" * len(PAIRS),
        "| outputs | "
        + " | ".join(f"[`{pair.metrics}`]({link(page, pair.metrics)})" for pair in PAIRS)
        + " |",
    ]
    for name in names:
        cells = [col.get(name, "-") if col else NOT_RUN for col in columns]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _budget_cell(pair: Pair, budget: str) -> str:
    compare = pair.read("arith/compare.json")
    decision = compare["decisions"]["test"][budget]
    if "recommended" not in decision:
        return verdict(decision)
    entry = compare["splits"]["test"]["table"][decision["recommended"]][budget]
    return f"{verdict(decision)}: {interval(entry['mat_gain_vs_exact_sd'], unit='x')}"


def _served_cell(pair: Pair, budgets: list[str]) -> str:
    bench = pair.read("bench.json")
    if bench is None:
        return NOT_RUN
    cells = []
    for budget in budgets:
        found = served(pair, budget)
        if found:
            setting, info, _ = found
            drift = (
                " (its own engine, timed in turn)"
                if info["own_engine"] and not bench.get("engines_together")
                else ""
            )
            cells.append(f"{budget} pt: {interval(setting['speedup_vs_exact_bs1'], unit='x')}{drift}")
    return "; ".join(cells) + f" ({bench['problems']} timed problems){_control_note(bench)}"


def _control_note(bench: dict) -> str:
    """What the ratios' denominator is worth: the control against stock SD, or that there was none."""
    control = bench.get("control")
    if control is None:
        return (
            "; over plugin exact SD, which then verified through vLLM's own kernel, not the rules' path: "
            "a run from before the benchmark had a lossless control, so not attributable to the rule"
        )
    versus = interval(control["vs_stock_bs1"], unit="x")
    return f"; the control itself: {versus} stock SD{' (the bias)' if control.get('biased') else ''}"


@writer("pairs-summary")
def summary_table(page: Path) -> str:
    """The README's table: per pair, the verdict at each budget, the ceiling, and the served speed."""
    compared = [pair for pair in PAIRS if pair.compared()]
    budgets = [str(b) for b in load(compared[0].metrics / "arith" / "compare.json")["budgets"]]
    head = " | ".join(f"within {b} point{'s' * (b != '1')}: recommended, MAT vs exact SD" for b in budgets)
    lines = [
        f"| pair (outputs) | important mismatches | {head} | a perfect judge, MAT vs exact SD | "
        "served by vLLM, bs 1: tokens/s vs the lossless control |",
        "|---|---|" + "---|" * len(budgets) + "---|---|",
    ]
    for pair in PAIRS:
        name = f"{pair.title} ([`{pair.metrics}`]({link(page, pair.metrics)}))"
        if not pair.compared():
            lines.append(f"| {name} | " + " | ".join([NOT_RUN] * (len(budgets) + 3)) + " |")
            continue
        mining = pair.read("arith/mining.json")
        cells = [
            f"{percent(mining['important_fraction'])} of {mining['mismatches']:,} ({mining['problems']} problems)",
            *(_budget_cell(pair, budget) for budget in budgets),
            ceiling(pair, page),
            _served_cell(pair, budgets),
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
