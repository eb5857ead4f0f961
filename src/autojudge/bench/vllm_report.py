"""The vLLM benchmark's report for people: the card's section (speed and energy tables, headline
markdown), the tokens/s curves, and the writers of its JSON, CSV, PNG and markdown outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autojudge.bench.vllm_plan import EXACT, RECOMMENDED, STOCK, TARGET, threshold_of
from autojudge.io import atomic_path, write_json, write_text

LABELS = {TARGET: "target alone", STOCK: "SD stock (vLLM)", EXACT: "SD exact (plugin)"}


def ci(figures: dict[str, Any], digits: int = 2) -> str:
    """``point [low, high]``."""
    return f"{figures['point']:.{digits}f} [{figures['low']:.{digits}f}, {figures['high']:.{digits}f}]"


def _signed_ci(figures: dict[str, Any]) -> str:
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


def _display_name(name: str, recommended: dict[str, dict] | None = None) -> str:
    label, threshold = _setting_label(name, recommended)
    return label if threshold == "-" else f"{label} at threshold {threshold}"


def _engines_sentence(together: bool) -> str:
    """How the engines shared the machine's minutes, and so what a ratio between them carries."""
    if together:
        return (
            "Every engine was alive at once (each in its own processes) and every setting's passes were "
            "interleaved with all the others: every ratio, within an engine or between engines, compares the "
            "same minutes of the machine. Plugin exact SD emits stock SD's tokens: its ratio over stock SD "
            "is what the plugin costs."
        )
    return (
        "Engines are timed one after another, each setting's passes interleaved with the others on its "
        "engine: a ratio between settings of one engine (the head's points and the request overrides over "
        "plugin exact SD, the judge overhead) compares the same minutes of the machine; a ratio between "
        "engines (over stock SD, over the target alone, an own-engine recommendation) also carries whatever "
        "the machine's speed did between their turns. Plugin exact SD emits stock SD's tokens: its ratio "
        "over stock SD shows how much."
    )


def speed_table(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The card's speed table: one row per setting at its chosen windows (batch size 1 first)."""
    sizes = [str(size) for size in sorted(report["batch_sizes"])]
    rows = []
    for name, figures in [(TARGET, report["target"]), *report["settings"].items()]:
        label, threshold = _setting_label(name, report.get("recommendations"))
        accuracy = figures["accuracy"]
        row: dict[str, Any] = {
            "setting": label,
            "threshold": threshold,
            f"window (bs {'/'.join(sizes)})": (
                "-" if name == TARGET else "/".join(str(figures["windows"][size]) for size in sizes)
            ),
            "accuracy, % [95% CI]": ci(accuracy["percent"], 1),
            "drop vs target, points [95% CI]": (
                "-" if name == TARGET else _signed_ci(accuracy["drop_vs_target_points"])
            ),
        }
        for size in sizes:
            row[f"tokens/s bs {size}"] = figures["by_batch"][size]["tokens_per_s"]
            row[f"s/problem bs {size}"] = figures["by_batch"][size]["seconds_per_problem"]
        row["speedup over stock SD, bs 1 [95% CI]"] = ci(figures["speedup_vs_stock_bs1"], 3)
        row["over plugin exact SD, bs 1 [95% CI]"] = (
            "-" if name == TARGET else ci(figures["speedup_vs_exact_bs1"], 3)
        )
        row["runner"] = _runner_text(figures["runner"])
        rows.append(row)
    return rows


def energy_table(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The card's energy table (batch size 1): joules per pass and per 1,000 tokens, or why not available."""
    entries = [(LABELS[TARGET], report["target"]["by_batch"]["1"])]
    entries += [
        (_display_name(name, report.get("recommendations")), figures["by_batch"]["1"])
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


def plot_tokens_per_s(path: Path, rows: list[dict[str, Any]], title: str) -> None:
    """tokens/s (batch size 1) against the window, one line per setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4))
    for name in dict.fromkeys(row["setting"] for row in rows):
        points = sorted((row["window"], row["tokens_per_s"]) for row in rows if row["setting"] == name)
        axes.plot(*zip(*points, strict=True), marker="o", label=name)
    axes.set_xscale("log", base=2)
    axes.set_xlabel("draft window W")
    axes.set_ylabel("tokens/s (batch size 1)")
    axes.set_title(title)
    axes.legend()
    figure.tight_layout()
    with atomic_path(path) as temporary:
        figure.savefig(temporary, dpi=120)
    plt.close(figure)


CARD_KEYS = (
    "date",
    "machine",
    "problems",
    "accuracy_problems",
    "windows",
    "batch_sizes",
    "tuning_repeats",
    "repeats",
    "bootstrap_samples",
    "seed",
    "headline",
    "judge_overhead",
)


def recommendation_figures(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each timed recommendation of the comparison: what it is, and its figures at batch size 1."""
    figures = {}
    for name, info in report.get("recommendations", {}).items():
        setting = report["settings"][name]
        figures[name] = {
            **info,
            "window": setting["windows"]["1"],
            "tokens_per_s_ratio_vs_stock": setting["speedup_vs_stock_bs1"],
            "tokens_per_s_ratio_vs_exact": setting["speedup_vs_exact_bs1"],
            "mat_ratio_vs_stock": setting["mat_ratio_vs_stock_bs1"],
            "accuracy_drop_vs_target_points": setting["accuracy"]["drop_vs_target_points"],
        }
    return figures


def card_section(report: dict[str, Any]) -> dict[str, Any]:
    """What the head's card shows of the benchmark: headline, judge overhead, recommendations, speed and
    energy tables."""
    return {
        **{key: report[key] for key in CARD_KEYS},
        "engines_together": report.get("engines_together", False),
        "window_tuning": report.get("window_tuning"),
        "recommendations": recommendation_figures(report),
        "speed": speed_table(report),
        "energy": energy_table(report),
    }


def _ratio_sentence(figures: dict[str, Any]) -> str:
    return f"{ci(figures)}x ({figures['verdict']})"


def _window_choice(section: dict[str, Any]) -> str:
    """How each setting's window was chosen, and how many passes its figures are the median of."""
    timed = f"the figures are medians of {section['repeats']} timed pass(es)"
    tuning = section.get("window_tuning")
    if tuning:
        return (
            f"Per setting, the window (of {section['windows']}) is the fastest at batch size 1 on "
            f"{tuning['repeats']} tuning pass(es) of {_tuning_problems(tuning)} (not timed), one window's "
            f"engines alive at a time (table below); {timed} at that window, after a warm-up."
        )
    if section["tuning_repeats"] == 0:
        return f"Every setting at window {section['windows'][0]}: {timed}, after a warm-up."
    return (
        f"Per setting and batch size, the window (of {section['windows']}) is the fastest on "
        f"{section['tuning_repeats']} tuning pass(es); {timed} further at that window, after a warm-up."
    )


def section_markdown(section: dict[str, Any]) -> list[str]:
    """Protocol, headline with intervals, speed and energy tables, and (when short of the ratio) why."""
    headline, overhead = section["headline"], section["judge_overhead"]
    fastest, recommended = headline["fastest_bs1"], section.get("recommendations", {})
    runner_up = _display_name(fastest["runner_up"], recommended)
    best = _display_name(fastest["highest_point"], recommended)
    if fastest["setting"] is not None:
        winner = f"**{best}** ({ci(fastest['ratio_over_runner_up'])}x the runner-up, {runner_up})"
    else:
        winner = (
            f"none named ({best} leads {runner_up} by {ci(fastest['ratio_over_runner_up'])}x, "
            "an interval that includes 1)"
        )
    overhead_ci = overhead["percent_interval"]
    lines = [
        f"{section['date']}, {section['machine']}: {section['problems']} timed problems at batch sizes "
        f"{section['batch_sizes']}. {_window_choice(section)} Accuracy on the first "
        f"{section['accuracy_problems']} problems (largest batch size, untimed). Intervals: 95% paired "
        "bootstrap over problems "
        f"({section['bootstrap_samples']} samples, seed {section['seed']}).",
        "",
        f"AutoJudge at the registered threshold {headline['registered_threshold']} "
        f"(W={headline['autojudge_window']}) against stock vLLM SD (W={headline['stock_window']}), "
        f"batch size 1: **{_ratio_sentence(headline['tokens_per_s_ratio_vs_stock'])} tokens/s** "
        f"(MAT {ci(headline['mat_ratio_vs_stock'])}x); against plugin exact SD "
        f"(W={headline['exact_window']}) {_ratio_sentence(headline['tokens_per_s_ratio_vs_exact'])}. "
        f"Plugin exact SD against stock SD: {_ratio_sentence(headline['exact_vs_stock'])}. "
        f"Accuracy drop against the target alone **{_signed_ci(headline['accuracy_drop_vs_target_points'])} "
        f"points** ({headline['accuracy_drop_vs_target_points']['verdict']}), against stock SD "
        f"{_signed_ci(headline['accuracy_drop_vs_stock_points'])}. Judge overhead: "
        f"**{_signed_ci(overhead_ci)}%** of step time (judge at threshold 0 vs exact, W={overhead['window']}). "
        f"Fastest at batch size 1: {winner}.",
        "",
        _engines_sentence(section.get("engines_together", False)),
        *_recommendation_lines(recommended),
        "",
        "### Speed (vLLM)",
        "",
        markdown(section["speed"]),
        "",
        "### Energy (batch size 1, one pass over the problems)",
        "",
        markdown(section["energy"]),
        *_tuning_lines(section.get("window_tuning"), recommended),
    ]
    if headline["why_below_min_ratio"]:
        lines += [
            "",
            f"### Why the ratio is below {headline['min_ratio']}",
            "",
            headline["why_below_min_ratio"],
        ]
    return lines


def _tuning_problems(tuning: dict[str, Any]) -> str:
    """The tuning problems' place in the split, counted from 1: the ones right after the timed problems."""
    first = tuning["first_problem"] + 1
    return f"problems {first}-{first + tuning['problems'] - 1} of the split"


def _tuning_lines(tuning: dict[str, Any] | None, recommended: dict[str, dict[str, Any]]) -> list[str]:
    """The tuning passes' tokens/s by window (chosen window starred) and the load during each window's phase."""
    if not tuning:
        return []
    rows = [
        {
            "setting": _display_name(name, recommended),
            **{
                f"W={w}": f"{rate:.1f}{' *' if int(w) == tuning['chosen'][name] else ''}"
                for w, rate in rates.items()
            },
        }
        for name, rates in tuning["tokens_per_s"].items()
    ]
    load = ", ".join(f"W={w} {a:.1f} -> {b:.1f}" for w, (a, b) in tuning["load_average_1m"].items())
    return [
        "",
        f"### Window tuning (tokens/s, batch size 1, {_tuning_problems(tuning)}; * chosen)",
        "",
        markdown(rows),
        "",
        f"Machine load (1-minute average) during each window's tuning: {load}.",
    ]


def _recommendation_lines(recommended: dict[str, dict[str, Any]]) -> list[str]:
    """One sentence per recommendation of the comparison, timed as served."""
    lines = []
    for info in recommended.values():
        if info["own_engine"]:
            engine, same_engine = "its own engine, started with the served config", ""
        else:
            engine = "the plugin engine"
            same_engine = f", {_ratio_sentence(info['tokens_per_s_ratio_vs_exact'])} plugin exact SD's on it"
        lines += [
            "",
            f"The comparison's recommendation within {'/'.join(info['budgets_points'])} point(s), "
            f"{info['compare_setting']} (on {engine}, W={info['window']}): "
            f"**{_ratio_sentence(info['tokens_per_s_ratio_vs_stock'])} stock SD's tokens/s** at batch size 1"
            f"{same_engine} (MAT {ci(info['mat_ratio_vs_stock'])}x), accuracy drop against the target alone "
            f"{_signed_ci(info['accuracy_drop_vs_target_points'])} points.",
        ]
    return lines


def report_markdown(report: dict[str, Any]) -> str:
    """The benchmark's results for humans."""
    title = f"# vLLM benchmark: pair {report['pair']}, task {report['task']}"
    lines = [title, "", *section_markdown(card_section(report))]
    if "load_average_1m" in report:
        before, after = report["load_average_1m"]
        lines += [
            "",
            f"Machine load (1-minute average) {before:.1f} before, {after:.1f} after, on {report['cpus']} CPUs.",
        ]
    if "command" in report:
        lines += ["", f"Made by `{report['command']}` in {report['runtime_seconds']:.0f} s."]
    return "\n".join(lines) + "\n"


def write_outputs(report: dict[str, Any], metrics: Path, curve: Path, markdown_path: Path) -> None:
    """The report as JSON, its tokens/s curves as ``curve``.csv + .png, and its tables as markdown."""
    from autojudge.evaluation.report import write_csv

    write_json(metrics, report)
    rows = curve_rows(report)
    write_csv(curve.with_suffix(".csv"), rows)
    plot_tokens_per_s(curve.with_suffix(".png"), rows, f"vLLM, {report['problems']} problems")
    write_text(markdown_path, report_markdown(report))
