"""The vLLM benchmark's figures from its measured runs: windows chosen on tuning passes, paired bootstrap
intervals of ratios and accuracy drops, the headline, and why the ratio falls short when it does."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from autojudge.bench.vllm_measure import Measured, first_timed, per_problem, summarize_runs
from autojudge.bench.vllm_plan import EXACT, OVERHEAD, STOCK, TARGET, round_threshold, threshold_of
from autojudge.bench.vllm_report import ci
from autojudge.evaluation.stats import mean_difference, mean_of_first, paired_bootstrap, rate_ratio, verdict
from autojudge.tasks.base import Example, Task


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
    task: Task,
    tokenizer: Any,
    accuracy_examples: list[Example],
    target: Measured,
    by_window: dict[int, Measured],
    head_threshold: float,
    bench: Any,
) -> dict[str, Any]:
    """The benchmark's results: per setting and window, windows chosen on tuning runs, intervals, headline."""
    sizes = sorted(bench.batch_sizes)

    def score(outputs: list[list[int]]) -> list[bool]:
        return [
            bool(task.score(tokenizer.decode(tokens, skip_special_tokens=True), example))
            for tokens, example in zip(outputs, accuracy_examples, strict=True)
        ]

    target_correct = score(target.accuracy[TARGET])
    target_figures: dict[str, Any] = {
        "by_batch": {str(size): summarize_runs(target.runs[TARGET][size]) for size in sizes},
        "runner": target.runners.get(TARGET),
        "bs1_problems": per_problem(target.runs[TARGET][1]),
    }
    summaries: dict[str, dict[int, dict[int, dict[str, Any]]]] = {}  # setting -> window -> batch size
    correct: dict[str, dict[int, list[bool]]] = {}
    for window, measured in sorted(by_window.items()):
        for name, per_size in measured.runs.items():
            summaries.setdefault(name, {})[window] = {size: summarize_runs(per_size[size]) for size in sizes}
            correct.setdefault(name, {})[window] = score(measured.accuracy[name])
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
    overhead_window = bench.overhead_window
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
                    "accuracy": sum(correct[name][window]) / len(accuracy_examples),
                    "runner": by_window[window].runners.get(name),
                }
                for window, per_size in per_window.items()
            }
            for name, per_window in summaries.items()
        },
        "step_cost": {
            name: step_cost_fit({w: s[1]["step_ms"] for w, s in summaries[name].items()})
            for name in (STOCK, EXACT)
        },
        "judge_overhead": {
            "window": overhead_window,
            "exact_step_ms": summaries[EXACT][overhead_window][1]["step_ms"],
            "judge_t0_step_ms": summaries[OVERHEAD][overhead_window][1]["step_ms"],
            "percent": percent["point"],
            "percent_interval": {**percent, "verdict": overhead_verdict},
            "same_tokens_as_exact": first_timed(at_overhead, OVERHEAD) == first_timed(at_overhead, EXACT),
        },
        "sd_stock_equals_target": _equals_target(by_window, STOCK, target_tokens),
        "sd_exact_equals_target": _equals_target(by_window, EXACT, target_tokens),
    }
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
        "accuracy_drop_vs_target_points": head["accuracy"]["drop_vs_target_points"],
        "accuracy_drop_vs_stock_points": head["accuracy"]["drop_vs_stock_points"],
        "fastest_bs1": _fastest(
            {TARGET: target_figures["bs1_problems"], **{n: f["bs1_problems"] for n, f in settings.items()}},
            bench,
        ),
        "judge_overhead_percent": percent["point"],
        "min_ratio": bench.min_ratio,
    }
    report["headline"]["why_below_min_ratio"] = _explain(report)
    return report


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
            f" Stock SD's step time over the windows fits {fixed:.2f} ms + {per_token:.3f} ms per draft "
            f"token: one draft forward costs {per_token / target_step:.2f} of a target-alone step, so "
            f"a step with W={head_w} drafts spends {per_token * head_w:.2f} ms drafting "
            f"against {fixed:.2f} ms fixed (target verification and engine overhead): the longer "
            "accepted runs are paid for in draft forwards."
        )
    return text
