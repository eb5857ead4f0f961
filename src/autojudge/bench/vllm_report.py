"""The vLLM benchmark's report for people: the card's section (the control, (a) to (c), the rounds, speed
and energy tables), the tokens/s plot, and the writers of its JSON, CSV, PNG and markdown outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autojudge.bench.vllm_tables import (
    ci,
    curve_rows,
    display_name,
    energy_table,
    markdown,
    signed_ci,
    speed_table,
)
from autojudge.io import atomic_path, write_json, write_text


def _engines_sentence(together: bool) -> str:
    """How the engines shared the machine's minutes, and so what a ratio between them carries."""
    if together:
        return (
            "Every engine was alive at once (each in its own processes) and every round ran every setting: "
            "every ratio, within an engine or between engines, compares the same minutes of the machine."
        )
    return (
        "Engines are timed one after another, each round running the settings of one engine: a ratio between "
        "settings of one engine (the plugin engine's rules over the control, the head's cost) compares the same "
        "minutes of the machine; a ratio between engines (over stock SD, over the target alone, an own-engine "
        "recommendation) also carries whatever the machine's speed did between their turns, and (a) shows how "
        "much."
    )


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
    "control",
    "judge_overhead",
    "round_order",
    "rounds",
    "threads",
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
            "tokens_per_s_ratio_vs_control": setting["speedup_vs_exact_bs1"],
            "mat_ratio_vs_stock": setting["mat_ratio_vs_stock_bs1"],
            "accuracy": setting.get("compared_accuracy"),
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
    runner_up = display_name(fastest["runner_up"], recommended)
    best = display_name(fastest["highest_point"], recommended)
    if fastest["setting"] is not None:
        winner = f"**{best}** ({ci(fastest['ratio_over_runner_up'])}x the runner-up, {runner_up})"
    else:
        winner = (
            f"none named ({best} leads {runner_up} by {ci(fastest['ratio_over_runner_up'])}x, "
            "an interval that includes 1)"
        )
    lines = [
        f"{section['date']}, {section['machine']}: {section['problems']} timed problems at batch sizes "
        f"{section['batch_sizes']}. {_window_choice(section)} {_rounds_sentence(section)} Accuracy beside a "
        "setting: the comparison's decode of the same rule and threshold on its test split, or none where it "
        "decoded no such setting. Intervals: 95% paired bootstrap over problems "
        f"({section['bootstrap_samples']} samples, seed {section['seed']}).",
        "",
        _control_sentence(section["control"]),
        "",
        f"AutoJudge at the registered threshold {headline['registered_threshold']} "
        f"(W={headline['autojudge_window']}), batch size 1: (b) "
        f"**{_ratio_sentence(headline['tokens_per_s_ratio_vs_control'])} the control's tokens/s** "
        f"(W={headline['exact_window']}), (c) {_ratio_sentence(headline['tokens_per_s_ratio_vs_stock'])} stock "
        f"SD's (W={headline['stock_window']}; MAT {ci(headline['mat_ratio_vs_stock'])}x). "
        f"{_accuracy_sentence(headline['accuracy'])} {_head_cost_sentence(overhead)} "
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


def _control_sentence(control: dict[str, Any]) -> str:
    """(a): the control against stock SD, and the bias named when its interval excludes 1.00."""
    text = (
        f"The control, plugin exact SD at W={control['window']} (the plugin engine verifying every draft "
        "token through the lossy rules' path and accepting nothing beyond exact: stock SD's tokens), runs at "
        f"(a) **{_ratio_sentence(control['vs_stock_bs1'])} stock SD's tokens/s**."
    )
    if control["biased"]:
        return text + (
            " Its interval excludes 1.00: **that is this benchmark's bias** (the plugin's path, or the engines' "
            "share of the machine), and every ratio over stock SD, (c), carries it; (b), a rule over the "
            "control, is what the rule's acceptances buy."
        )
    return text + (
        " Its interval contains 1.00: the path's cost is not distinguishable here; (b), a rule over the "
        "control, is what the rule's acceptances buy, and (c) what it buys over stock vLLM."
    )


def _accuracy_sentence(accuracy: dict[str, Any] | None) -> str:
    if accuracy is None:
        return "The comparison decoded no such setting: no accuracy is shown for it."
    return (
        f"On the comparison's test decode ({accuracy['problems']} problems, {accuracy['compare_setting']}): "
        f"accuracy drop against the target alone **{signed_ci(accuracy['drop_vs_target_points'])} points** "
        f"({accuracy['drop_vs_target_points']['verdict']})."
    )


def _head_cost_sentence(overhead: dict[str, Any]) -> str:
    """The judge at threshold 0 (exact SD's tokens, the head computed every step) against the control."""
    interval = overhead["percent_interval"]
    text = (
        f"The head's cost: **{signed_ci(interval)}%** of step time (judge at threshold 0 vs the control, "
        f"W={overhead['window']})"
    )
    if interval["verdict"] == "faster":
        return text + ": shorter steps, which computing a head cannot cause, so it is the benchmark's bias."
    return text + "."


def _rounds_sentence(section: dict[str, Any]) -> str:
    """How the rounds ordered the settings, the load they ran under, and how threads were set."""
    timed = [r for r in section["rounds"] if r["phase"] == "timed"]
    load = ", ".join(f"{a:.1f}->{b:.1f}" for a, b in (r["load_1m"] for r in timed))
    threads = section["threads"]
    return (
        f"Every round runs every setting once, in {section['round_order']['scheme']} (seed "
        f"{section['round_order']['seed']}; bench.json `rounds`); 1-minute load at each timed round's start "
        f"and end: {load}, on {threads['usable_cpus']} usable CPUs. Threads: torch {threads['torch_threads']}, "
        f"OMP_NUM_THREADS={threads['OMP_NUM_THREADS']}, OMP_WAIT_POLICY={threads['OMP_WAIT_POLICY']}, "
        f"VLLM_CPU_OMP_THREADS_BIND={threads['VLLM_CPU_OMP_THREADS_BIND']}: each engine's worker binds those "
        "cores and only one engine decodes at a time."
    )


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
            "setting": display_name(name, recommended),
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
        engine = (
            "its own engine, started with the served config" if info["own_engine"] else "the plugin engine"
        )
        lines += [
            "",
            f"The comparison's recommendation within {'/'.join(info['budgets_points'])} point(s), "
            f"{info['compare_setting']} (on {engine}, W={info['window']}), batch size 1: (b) "
            f"**{_ratio_sentence(info['tokens_per_s_ratio_vs_control'])} the control's tokens/s**, (c) "
            f"{_ratio_sentence(info['tokens_per_s_ratio_vs_stock'])} stock SD's "
            f"(MAT {ci(info['mat_ratio_vs_stock'])}x). {_accuracy_sentence(info['accuracy'])}",
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
