"""The vLLM benchmark's figures from its measured runs: windows chosen on tuning passes, paired bootstrap
intervals of ratios and accuracy drops, the headline, and why the ratio falls short when it does."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from autojudge.bench.vllm_measure import Measured, first_timed, per_problem, summarize_runs
from autojudge.bench.vllm_plan import BenchPlan
from autojudge.bench.vllm_settings import EXACT, OVERHEAD, STOCK, TARGET, round_threshold, threshold_of
from autojudge.bench.vllm_tables import ci
from autojudge.evaluation.stats import mean_difference, mean_of_first, paired_bootstrap, rate_ratio, verdict

Correct = dict[str, dict[int, list[bool]]]  # setting -> window -> the check decode's problems, scored


def choose_window(tokens_per_s: dict[int, float]) -> int:
    """The window whose tuning passes were fastest (``{window: median tokens/s}``); a tie goes to the smaller."""
    return max(sorted(tokens_per_s), key=tokens_per_s.__getitem__)


def step_cost_fit(step_ms_by_window: dict[int, float]) -> dict[str, float] | None:
    """Least-squares ``step_ms = fixed + per_draft_token * W`` over SD's windows (None below 2)."""
    if len(step_ms_by_window) < 2:
        return None
    windows, steps = list(step_ms_by_window), list(step_ms_by_window.values())
    slope, intercept = statistics.linear_regression(windows, steps)
    return {"fixed_ms": round(intercept, 4), "per_draft_token_ms": round(slope, 4)}


STEP_COST = (
    "least squares step_ms = fixed + per_draft_token * W over lossless SD's windows at batch size 1 (a step: "
    "one target pass of one request); per draft token: one more proposer step and one more row the target "
    "verifies, which the target alone never pays; against the target alone's step"
)


def step_cost(
    timed: dict[str, dict[int, float]],
    tuning: dict[str, dict[int, float]],
    target_step_ms: float,
    proposer: str,
) -> dict[str, Any]:
    """The step-cost fit of stock SD and the control (``timed``/``tuning``: setting -> window -> step ms of the
    timed and the window-tuning passes), and one draft token's cost relative to a step of the target alone.
    A setting timed at one window is fitted over its tuning passes (each window on the tuning problems); one
    window and no tuning: None, and ``reason`` says why."""
    figures: dict[str, Any] = {"what": STEP_COST, "proposer": proposer, "reason": None}
    for name in (STOCK, EXACT):
        source, steps = "timed passes", timed[name]
        if len(steps) < 2:
            source, steps = "tuning passes", tuning.get(name, {})
        fit = step_cost_fit(steps)
        if fit is None:
            figures[name] = None
            figures["reason"] = "lossless SD was timed at one window and no window was tuned: no line to fit"
            continue
        ratio = round(fit["per_draft_token_ms"] / target_step_ms, 3) if target_step_ms else None
        figures[name] = {
            **fit,
            "draft_token_vs_target_step": ratio,
            "source": source,
            "windows": sorted(steps),
        }
    return figures


def _interval(
    result: tuple[float, float, float], digits: int, neutral: float, above: str, below: str
) -> dict[str, Any]:
    point, low, high = result
    return {
        "point": round(point, digits),
        "low": round(low, digits),
        "high": round(high, digits),
        "verdict": verdict(low, high, neutral, above, below),
    }


def rate_comparison(
    a: dict[str, Any],
    b: dict[str, Any],
    numerator: str,
    denominator: str,
    bench: Any,
    words: tuple[str, str] = ("faster", "slower"),
) -> dict[str, Any]:
    """(sum numerator / sum denominator) of problems ``a`` over the same of ``b``, with its 95% interval.

    ``a`` and ``b`` are :func:`per_problem` figures of the same problems: tokens/seconds gives the
    tokens/s ratio, tokens/passes the MAT ratio, seconds/passes the step-time ratio.
    """
    return _interval(_rate_bootstrap(a, b, numerator, denominator, bench), 3, 1.0, *words)


def _rate_bootstrap(
    a: dict[str, Any], b: dict[str, Any], numerator: str, denominator: str, bench: Any
) -> tuple[float, float, float]:
    rows_a = list(zip(a[numerator], a[denominator], strict=True))
    rows_b = list(zip(b[numerator], b[denominator], strict=True))
    return paired_bootstrap(rows_a, rows_b, rate_ratio, bench.bootstrap_samples, bench.seed)


def accuracy_figures(
    correct: Sequence[bool], target_correct: Sequence[bool], stock_correct: Sequence[bool] | None, bench: Any
) -> dict[str, Any]:
    """Accuracy in percent with its interval, and its drops (points) against the target alone and stock SD."""
    points = [100.0 * c for c in correct]

    def drop(reference: Sequence[bool]) -> dict[str, Any]:
        result = paired_bootstrap(
            [100.0 * c for c in reference], points, mean_difference, bench.bootstrap_samples, bench.seed
        )
        return _interval(result, 2, 0.0, "drop", "gain")

    percent = paired_bootstrap(points, points, mean_of_first, bench.bootstrap_samples, bench.seed)
    figures = {
        "problems": len(points),
        "correct": int(sum(correct)),
        "accuracy": sum(correct) / len(points),
        "percent": {
            key: round(value, 2) for key, value in zip(("point", "low", "high"), percent, strict=True)
        },
        "drop_vs_target_points": drop(target_correct),
    }
    if stock_correct is not None:
        figures["drop_vs_stock_points"] = drop(stock_correct)
    return figures


def _setting_order(name: str) -> tuple[int, float]:
    """Stock SD, plugin exact SD, then AutoJudge by threshold."""
    if name.startswith("autojudge_t"):
        return 2, threshold_of(name)
    return {STOCK: 0, EXACT: 1}.get(name, 3), 0.0


def _fastest(problems: dict[str, dict[str, Any]], bench: Any) -> dict[str, Any]:
    """The fastest setting at batch size 1, named only when its interval over the runner-up excludes 1."""
    rate = {name: sum(p["tokens"]) / sum(p["seconds"]) for name, p in problems.items()}
    best, runner_up = sorted(rate, key=rate.__getitem__, reverse=True)[:2]
    ratio = rate_comparison(problems[best], problems[runner_up], "tokens", "seconds", bench)
    return {
        "setting": best if ratio["verdict"] == "faster" else None,
        "highest_point": best,
        "runner_up": runner_up,
        "ratio_over_runner_up": ratio,
    }


def build_report(
    plan: BenchPlan,
    target: Measured,
    by_window: dict[int, Measured],
    correct: Correct,
    tuning_step_ms: dict[str, dict[int, float]] | None = None,
) -> dict[str, Any]:
    """The benchmark's results from what its timed phase measured: per setting and window, windows chosen on
    tuning runs, intervals, the control, the step cost, headline. ``correct``: the check decode scored
    (setting -> window -> per problem; the target alone at window 0); ``tuning_step_ms``: step times of the
    window-tuning passes (:class:`autojudge.bench.window_tuning.WindowTuning`); the accuracy beside a setting
    is the comparison's decode of it (``plan.compared``)."""
    bench, compared = plan.bench, plan.compared
    sizes = sorted(bench.batch_sizes)
    target_correct = correct[TARGET][0]
    target_figures: dict[str, Any] = {
        "by_batch": {str(size): summarize_runs(target.runs[TARGET][size]) for size in sizes},
        "runner": target.runners.get(TARGET),
        "bs1_problems": per_problem(target.runs[TARGET][1]),
    }
    summaries: dict[str, dict[int, dict[int, dict[str, Any]]]] = {}  # setting -> window -> batch size
    for window, measured in sorted(by_window.items()):
        for name, per_size in measured.runs.items():
            summaries.setdefault(name, {})[window] = {size: summarize_runs(per_size[size]) for size in sizes}
    settings: dict[str, dict[str, Any]] = {}
    for name in sorted(summaries, key=_setting_order):
        if name == OVERHEAD:
            continue
        chosen = {
            size: choose_window({w: s[size]["tuning_tokens_per_s"] for w, s in summaries[name].items()})
            for size in sizes
        }
        settings[name] = {
            "windows": {str(size): window for size, window in chosen.items()},
            "by_batch": {str(size): summaries[name][chosen[size]][size] for size in sizes},
            "runner": by_window[chosen[1]].runners.get(name),
            "bs1_problems": per_problem(by_window[chosen[1]].runs[name][1]),
        }
    stock = settings[STOCK]
    stock_correct = correct[STOCK][stock["windows"]["1"]]
    target_figures["accuracy"] = accuracy_figures(target_correct, target_correct, None, bench)
    target_figures["accuracy"]["per_problem"] = [int(c) for c in target_correct]
    for figures in [target_figures, *settings.values()]:
        problems = figures["bs1_problems"]
        figures["speedup_vs_stock_bs1"] = rate_comparison(
            problems, stock["bs1_problems"], "tokens", "seconds", bench
        )
    target_tokens = first_timed(target, TARGET)
    exact_problems = settings[EXACT]["bs1_problems"]
    for name, figures in settings.items():
        window = figures["windows"]["1"]
        figures["speedup_vs_target_bs1"] = rate_comparison(
            figures["bs1_problems"], target_figures["bs1_problems"], "tokens", "seconds", bench
        )
        # the plugin engine's settings against exact SD on that engine, their passes interleaved: no drift
        figures["speedup_vs_exact_bs1"] = rate_comparison(
            figures["bs1_problems"], exact_problems, "tokens", "seconds", bench
        )
        figures["mat_ratio_vs_stock_bs1"] = rate_comparison(
            figures["bs1_problems"], stock["bs1_problems"], "tokens", "passes", bench, ("higher", "lower")
        )
        figures["accuracy"] = {
            "window": window,
            **accuracy_figures(correct[name][window], target_correct, stock_correct, bench),
            "same_tokens_as_target": by_window[window].accuracy[name] == target.accuracy[TARGET],
            "per_problem": [int(c) for c in correct[name][window]],
        }
    for name, figures in [(TARGET, target_figures), *settings.items()]:
        if compared and name in compared:
            figures["compared_accuracy"] = compared_accuracy(compared, name, bench)
    overhead_window = next(w for w, m in sorted(by_window.items()) if OVERHEAD in m.runs)
    at_overhead = by_window[overhead_window]
    step_ratio = _rate_bootstrap(  # judge at threshold 0 over exact: step time (seconds per target pass)
        per_problem(at_overhead.runs[OVERHEAD][1]),
        per_problem(at_overhead.runs[EXACT][1]),
        "seconds",
        "passes",
        bench,
    )
    percent = dict(zip(("point", "low", "high"), (round(100 * (r - 1), 2) for r in step_ratio), strict=True))
    overhead_verdict = verdict(step_ratio[1], step_ratio[2], 1.0, "slower", "faster")
    report: dict[str, Any] = {
        "target": target_figures,
        "settings": settings,
        "by_window": {
            name: {
                str(window): {
                    "by_batch": {str(size): summary for size, summary in per_size.items()},
                    "accuracy": sum(correct[name][window]) / len(correct[name][window]),
                    "runner": by_window[window].runners.get(name),
                }
                for window, per_size in per_window.items()
            }
            for name, per_window in summaries.items()
        },
        "step_cost": step_cost(
            {name: {w: s[1]["step_ms"] for w, s in summaries[name].items()} for name in (STOCK, EXACT)},
            tuning_step_ms or {},
            target_figures["by_batch"]["1"]["step_ms"],
            plan.models.proposer,
        ),
        "judge_overhead": {
            "window": overhead_window,
            "exact_step_ms": summaries[EXACT][overhead_window][1]["step_ms"],
            "judge_t0_step_ms": summaries[OVERHEAD][overhead_window][1]["step_ms"],
            "percent": percent["point"],
            "percent_interval": {**percent, "verdict": overhead_verdict},
            "same_tokens_as_exact": first_timed(at_overhead, OVERHEAD) == first_timed(at_overhead, EXACT),
        },
        "control": control_figures(settings),
        "sd_stock_equals_target": _equals_target(by_window, STOCK, target_tokens),
        "sd_exact_equals_target": _equals_target(by_window, EXACT, target_tokens),
    }
    head_threshold = plan.head["threshold"]
    head_name = next(
        n
        for n in settings
        if n.startswith("autojudge_t") and threshold_of(n) == round_threshold(head_threshold)
    )
    head = settings[head_name]
    report["headline"] = {
        "autojudge_setting": head_name,
        "registered_threshold": round_threshold(head_threshold),
        "autojudge_window": head["windows"]["1"],
        "stock_window": stock["windows"]["1"],
        "exact_window": settings[EXACT]["windows"]["1"],
        "tokens_per_s_ratio_vs_stock": head["speedup_vs_stock_bs1"],
        "tokens_per_s_ratio_vs_exact": head["speedup_vs_exact_bs1"],
        "exact_vs_stock": settings[EXACT]["speedup_vs_stock_bs1"],
        "mat_ratio_vs_stock": head["mat_ratio_vs_stock_bs1"],
        "step_time_ratio_vs_stock": rate_comparison(
            head["bs1_problems"], stock["bs1_problems"], "seconds", "passes", bench, ("longer", "shorter")
        ),
        "tokens_per_s_ratio_vs_control": head["speedup_vs_exact_bs1"],
        "accuracy": head.get("compared_accuracy"),  # the comparison's decode of this setting, or none
        "fastest_bs1": _fastest(
            {TARGET: target_figures["bs1_problems"], **{n: f["bs1_problems"] for n, f in settings.items()}},
            bench,
        ),
        "judge_overhead_percent": percent["point"],
        "min_ratio": bench.min_ratio,
    }
    report["headline"]["why_below_min_ratio"] = _explain(report)
    return report


def compared_accuracy(compared: dict[str, tuple[str, list[bool]]], name: str, bench: Any) -> dict[str, Any]:
    """Setting ``name``'s accuracy on the comparison's test decode, and its drops against the target alone and
    (when decoded) exact SD there, with intervals."""
    setting, correct = compared[name]
    stock = compared[STOCK][1] if STOCK in compared and name != TARGET else None
    return {"compare_setting": setting, **accuracy_figures(correct, compared[TARGET][1], stock, bench)}


def control_figures(settings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The control, plugin exact SD (every token verified through the lossy rules' path, none accepted beyond
    exact), against stock SD: the path's cost, (a); ``biased`` when its interval excludes 1, so that every
    ratio over stock SD carries it."""
    ratio = settings[EXACT]["speedup_vs_stock_bs1"]
    return {
        "setting": EXACT,
        "rule": {"rule": "exact"},
        "window": settings[EXACT]["windows"]["1"],
        "vs_stock_bs1": ratio,
        "biased": not ratio["low"] <= 1.0 <= ratio["high"],
    }


def _equals_target(
    by_window: dict[int, Measured], name: str, target_tokens: list[list[int]]
) -> dict[str, bool]:
    """Whether lossless setting ``name`` emitted the target's tokens, at each window it was timed at."""
    return {
        str(w): first_timed(m, name) == target_tokens for w, m in sorted(by_window.items()) if name in m.runs
    }


def _explain(report: dict[str, Any]) -> str | None:
    """Why AutoJudge's tokens/s ratio over stock SD falls short of ``min_ratio``, from measured step times."""
    headline = report["headline"]
    ratio = headline["tokens_per_s_ratio_vs_stock"]
    if ratio["point"] >= headline["min_ratio"]:
        return None
    head, stock = report["settings"][headline["autojudge_setting"]], report["settings"][STOCK]
    head_bs1, stock_bs1 = head["by_batch"]["1"], stock["by_batch"]["1"]
    head_w, stock_w = headline["autojudge_window"], headline["stock_window"]
    target_step = report["target"]["by_batch"]["1"]["step_ms"]
    text = (
        f"AutoJudge raises tokens per target pass (MAT) {ci(headline['mat_ratio_vs_stock'])}x over stock SD "
        f"({stock_bs1['mat']:.2f} at W={stock_w} -> {head_bs1['mat']:.2f} at W={head_w}), "
        f"but its steps take {ci(headline['step_time_ratio_vs_stock'])}x as long "
        f"({stock_bs1['step_ms']:.2f} -> {head_bs1['step_ms']:.2f} ms), so tokens/s gain only "
        f"{ci(ratio)}x (95% intervals). The target alone takes {target_step:.2f} ms per token."
    )
    if head["runner"] and stock["runner"] and head["runner"]["runner"] != stock["runner"]["runner"]:
        text += (
            f" Stock SD ran on model runner {stock['runner']['runner']}, AutoJudge on {head['runner']['runner']}: "
            "the step times include the runners' difference."
        )
    fit = report["step_cost"][STOCK]
    if fit is not None:
        per_token, fixed = fit["per_draft_token_ms"], fit["fixed_ms"]
        text += (
            f" Stock SD's step time over the windows ({fit['source']}) fits {fixed:.2f} ms + {per_token:.3f} ms "
            f"per draft token: one draft token (a proposer step and a row to verify) costs "
            f"{fit['draft_token_vs_target_step']:.2f} of a target-alone step, so a step with W={head_w} drafts "
            f"spends {per_token * head_w:.2f} ms on them against {fixed:.2f} ms fixed (target verification and "
            "engine overhead): the longer accepted runs are paid for in draft tokens."
        )
    return text
