"""The evaluation report: the accuracy/MAT table, the chosen operating point, curves as CSV and PNG."""

from __future__ import annotations

import csv
from pathlib import Path

from autojudge.io import atomic_path, write_text

CURVE_FIELDS = ("family", "setting", "accuracy", "mat")


def headline(rows: list[dict], head_threshold: float) -> dict:
    """The figures a user decides on: the head at its chosen threshold against the baselines."""
    by_method = {}
    for row in rows:
        by_method.setdefault(row["method"], []).append(row)
    target = by_method["target"][0]
    exact = by_method["exact"][0]
    judge = min(by_method["judge"], key=lambda r: abs(r["threshold"] - head_threshold))
    return {
        "target_accuracy": target["accuracy"],
        "exact_sd_accuracy": exact["accuracy"],
        "exact_sd_mat": exact["mat"],
        "judge_threshold": judge["threshold"],
        "judge_accuracy": judge["accuracy"],
        "judge_mat": judge["mat"],
        "mat_gain_vs_exact_sd": judge["mat"] / exact["mat"] if exact["mat"] else 0.0,
        "accuracy_drop_vs_target": target["accuracy"] - judge["accuracy"],
        "accuracy_drop_vs_exact_sd": exact["accuracy"] - judge["accuracy"],
    }


def curve_rows(rows: list[dict]) -> list[dict]:
    """Rows of the accuracy-vs-MAT plot: one family per method, sorted by MAT."""
    curve = [
        {"family": row["method"], "setting": row["setting"], "accuracy": row["accuracy"], "mat": row["mat"]}
        for row in rows
        if row["method"] != "draft"  # the draft alone has no target passes, hence no MAT
    ]
    return sorted(curve, key=lambda r: (r["family"], r["mat"]))


def write_curve_csv(path: Path, rows: list[dict]) -> None:
    lines = [",".join(CURVE_FIELDS)]
    lines += [",".join(str(row[field]) for field in CURVE_FIELDS) for row in curve_rows(rows)]
    write_text(path, "\n".join(lines) + "\n")


def plot_accuracy_vs_mat(
    path: Path, rows: list[dict], title: str, draft_accuracy: float | None = None
) -> None:
    """Accuracy against mean accepted tokens per target pass, one line per method family."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    families: dict[str, list[dict]] = {}
    for row in curve_rows(rows):
        families.setdefault(row["family"], []).append(row)
    styles = {
        "judge": ("o-", "AutoJudge head"),
        "topk": ("s--", "top-K"),
        "exact": ("D", "exact SD"),
        "target": ("*", "target alone"),
    }
    for family, points in families.items():
        marker, label = styles.get(family, ("x:", family))
        axes.plot(
            [p["mat"] for p in points], [100 * p["accuracy"] for p in points], marker, label=label, ms=7
        )
    if draft_accuracy is not None:
        axes.axhline(100 * draft_accuracy, color="grey", lw=0.8, ls=":", label="draft alone")
    axes.set_xlabel("mean accepted tokens per target forward pass (MAT)")
    axes.set_ylabel("accuracy, %")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(loc="lower left")
    figure.tight_layout()
    with atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=120)
    plt.close(figure)


def markdown_table(rows: list[dict]) -> str:
    lines = ["| setting | accuracy, % | MAT | lossy accepts |", "|---|---:|---:|---:|"]
    for row in rows:
        mat = f"{row['mat']:.2f}" if row["method"] != "draft" else "n/a"
        lines.append(
            f"| {row['setting']} | {100 * row['accuracy']:.1f} | {mat} | {row['accepted_mismatches']} |"
        )
    return "\n".join(lines)


def write_csv(path: Path, rows: list[dict]) -> None:
    with atomic_path(path) as temporary, temporary.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
