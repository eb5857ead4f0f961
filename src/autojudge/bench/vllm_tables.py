"""The vLLM benchmark's tables: setting labels, intervals as text, the speed and energy tables, the tokens/s
curves' rows, and markdown of uniform rows."""

from __future__ import annotations

from typing import Any

from autojudge.bench.vllm_settings import EXACT, RECOMMENDED, STOCK, TARGET, threshold_of

LABELS = {TARGET: "target alone", STOCK: "SD stock (vLLM)", EXACT: "control: SD exact (plugin)"}


def ci(figures: dict[str, Any], digits: int = 2) -> str:
    """``point [low, high]``."""
    return f"{figures['point']:.{digits}f} [{figures['low']:.{digits}f}, {figures['high']:.{digits}f}]"


def signed_ci(figures: dict[str, Any]) -> str:
    return f"{figures['point']:+.1f} [{figures['low']:+.1f}, {figures['high']:+.1f}]"


def _runner_text(runner: dict[str, str] | None) -> str:
    if not runner:
        return "-"
    return f"{runner['runner'].split(' (')[0]}, {runner['worker_cls'].rsplit('.', 1)[-1]}, plugin {runner['plugin']}"


def _setting_label(name: str, recommended: dict[str, dict] | None = None) -> tuple[str, Any]:
    """The table's setting and threshold columns (``recommended``: the report's recommendations)."""
    if name in LABELS:
        return LABELS[name], "-"
    if name.startswith(RECOMMENDED):
        info = (recommended or {})[name]
        config = info["served_config"]
        value = config.get("threshold", config.get("top_k", "-"))
        return f"recommended within {'/'.join(info['budgets_points'])} pt: {info['method']}", value
    return "AutoJudge", threshold_of(name)


def display_name(name: str, recommended: dict[str, dict] | None = None) -> str:
    label, threshold = _setting_label(name, recommended)
    return label if threshold == "-" else f"{label} at threshold {threshold}"


def speed_table(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The card's speed table: one row per setting at its chosen windows (batch size 1 first)."""
    sizes = [str(size) for size in sorted(report["batch_sizes"])]
    rows = []
    for name, figures in [(TARGET, report["target"]), *report["settings"].items()]:
        label, threshold = _setting_label(name, report.get("recommendations"))
        accuracy = figures.get("compared_accuracy")
        row: dict[str, Any] = {
            "setting": label,
            "threshold": threshold,
            f"window (bs {'/'.join(sizes)})": (
                "-" if name == TARGET else "/".join(str(figures["windows"][size]) for size in sizes)
            ),
        }
        for size in sizes:
            row[f"tokens/s bs {size}"] = figures["by_batch"][size]["tokens_per_s"]
            row[f"s/problem bs {size}"] = figures["by_batch"][size]["seconds_per_problem"]
        row["(b) over the control, bs 1 [95% CI]"] = (
            "-" if name == TARGET else ci(figures["speedup_vs_exact_bs1"], 3)
        )
        row["(c) over stock SD, bs 1 [95% CI]"] = ci(figures["speedup_vs_stock_bs1"], 3)
        row["accuracy, % [95% CI] (comparison)"] = ci(accuracy["percent"], 1) if accuracy else "-"
        row["drop vs target, points [95% CI]"] = (
            signed_ci(accuracy["drop_vs_target_points"]) if accuracy and name != TARGET else "-"
        )
        row["runner"] = _runner_text(figures["runner"])
        rows.append(row)
    return rows


def energy_table(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The card's energy table (batch size 1): joules per pass and per 1,000 tokens, or why not available."""
    entries = [(LABELS[TARGET], report["target"]["by_batch"]["1"])]
    entries += [
        (display_name(name, report.get("recommendations")), figures["by_batch"]["1"])
        for name, figures in report["settings"].items()
    ]
    rows = []
    for name, figures in entries:
        energy = figures["energy"]
        if energy["available"]:
            rows.append(
                {
                    "setting": name,
                    "joules": energy["joules"],
                    "J per 1k tokens": energy["joules_per_1k_tokens"],
                    "mean W": energy["mean_watts"],
                    "GPU or reason": ", ".join(sorted(set(energy["gpus"]))),
                }
            )
        else:
            rows.append(
                {
                    "setting": name,
                    "joules": "not available",
                    "J per 1k tokens": "-",
                    "mean W": "-",
                    "GPU or reason": energy["reason"],
                }
            )
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """A markdown table of uniform rows."""
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(row[c]) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def curve_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """tokens/s by setting and window (timed passes; batch size 1 and the others), for the DVC plot."""
    sizes = sorted(report["batch_sizes"])
    rows = []
    for name, per_window in report["by_window"].items():
        for window, figures in per_window.items():
            bs1 = figures["by_batch"]["1"]
            row = {
                "setting": name,
                "window": int(window),
                "tokens_per_s": bs1["tokens_per_s"],
                "tuning_tokens_per_s": bs1["tuning_tokens_per_s"],
                **{
                    f"tokens_per_s_bs{size}": figures["by_batch"][str(size)]["tokens_per_s"]
                    for size in sizes[1:]
                },
                "accuracy": figures["accuracy"],
                "mat": bs1["mat"],
            }
            rows.append(row)
    return rows
