"""The README's picture: MAT gain over exact SD against accuracy drop of every method at its chosen point on
the test split, one panel per pair, with the ceiling (a perfect judge) as a line.

``results/pairs/pairs.csv`` holds every plotted figure (the check compares it with what the committed files
give now); ``results/pairs/pairs.png`` is drawn from the same rows.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from .pairs import PAIRS, Pair, label
from .sources import ROOT, bounds, load

CSV = Path("results/pairs/pairs.csv")
PNG = Path("results/pairs/pairs.png")
FIELDS = (
    "pair",
    "budget",
    "method",
    "setting",
    "drop",
    "drop_low",
    "drop_high",
    "mat",
    "mat_low",
    "mat_high",
)


def _ceiling(pair: Pair) -> tuple[float, float, float]:
    compare = pair.read("arith/compare.json")
    if "ceiling" in compare:
        return bounds(compare["ceiling"]["ratio"])
    record = load("results/ceiling/ceiling.json")["records"][pair.ceiling_record]
    return bounds(record["windows"][str(compare["protocol"]["window"])]["ratio"])


def rows() -> list[dict[str, str]]:
    """Every plotted point: each method's chosen point per budget (once where budgets share it) and each
    pair's ceiling (method ``ceiling``, at no drop)."""
    found = []
    for pair in PAIRS:
        if not pair.compared():
            continue
        compare = pair.read("arith/compare.json")
        seen = set()
        for budget in compare["budgets"]:
            for method, by_budget in compare["splits"]["test"]["table"].items():
                entry = by_budget.get(str(budget))
                if method == "exact" or not entry or entry["setting"] in seen:
                    continue
                seen.add(entry["setting"])
                drop = [100 * v for v in bounds(entry["accuracy_drop"])]
                mat = bounds(entry["mat_gain_vs_exact_sd"])
                found.append((pair.title, str(budget), method, entry["setting"], *drop, *mat))
        found.append((pair.title, "", "ceiling", "a perfect judge", 0.0, 0.0, 0.0, *_ceiling(pair)))
    return [
        {k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in zip(FIELDS, row, strict=True)}
        for row in found
    ]


def table() -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows())
    return out.getvalue()


def draw(points: list[dict[str, str]], path: Path) -> None:
    """The PNG: one panel per pair, a colour per method, error bars of both 95% intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = list(dict.fromkeys(p["pair"] for p in points))
    methods = list(dict.fromkeys(p["method"] for p in points if p["method"] != "ceiling"))
    palette = plt.get_cmap("tab10" if len(methods) <= 10 else "tab20")
    colours = {m: palette(i % palette.N) for i, m in enumerate(methods)}
    figure, axes = plt.subplots(1, len(pairs), figsize=(4.4 * len(pairs), 4.4), squeeze=False)
    for axis, pair in zip(axes[0], pairs, strict=True):
        for p in (p for p in points if p["pair"] == pair):
            x, y = float(p["drop"]), float(p["mat"])
            if p["method"] == "ceiling":
                axis.axhline(y, color="grey", linestyle="--", linewidth=1)
                axis.annotate("a perfect judge", (0.02, y), xycoords=("axes fraction", "data"), va="bottom")
                continue
            xerr = [[x - float(p["drop_low"])], [float(p["drop_high"]) - x]]
            yerr = [[y - float(p["mat_low"])], [float(p["mat_high"]) - y]]
            marker = "o" if p["budget"] == "1" else "s"
            axis.errorbar(x, y, xerr=xerr, yerr=yerr, fmt=marker, color=colours[p["method"]], capsize=2)
        for budget in sorted({p["budget"] for p in points if p["budget"]}):
            axis.axvline(float(budget), color="black", linestyle=":", linewidth=0.8)
        axis.axhline(1.0, color="black", linewidth=0.5)
        axis.annotate("exact SD", (0.02, 1.0), xycoords=("axes fraction", "data"), va="bottom")
        axis.set_title(pair)
        axis.set_xlabel("accuracy drop vs target greedy, points")
    axes[0][0].set_ylabel("MAT vs exact SD")
    handles = [
        plt.Line2D([], [], color=colours[m], marker="o", linestyle="", label=label(m)) for m in methods
    ]
    figure.legend(handles=handles, loc="lower center", ncol=min(len(handles), 6), frameon=False)
    figure.suptitle(
        "Every method at its chosen point on the arith test split (o: 1-point budget, s: 2-point)"
    )
    figure.tight_layout(rect=(0, 0.1, 1, 0.95))
    figure.savefig(ROOT / path, dpi=100, metadata={"Software": None})
    plt.close(figure)


def write() -> None:
    """Writes the CSV and draws the PNG from it."""
    text = table()
    (ROOT / CSV).write_text(text)
    draw(list(csv.DictReader(io.StringIO(text))), PNG)
