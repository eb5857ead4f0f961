"""Tokens/s with vLLM: target alone, stock vLLM SD, plugin exact SD and AutoJudge at several thresholds.

Protocol (the AutoJudge paper, section 4.3 and appendix G, with an honest baseline):

* Baselines: the target alone and **stock vLLM speculative decoding** (``sd_stock``: the same
  draft-model SD with the autojudge plugin not loaded in the engine's processes). ``sd_exact`` is
  the plugin's exact rule (the same tokens; what the plugin itself costs). Headline ratios are
  against ``sd_stock``; exact against stock is reported too.
* Every speculative setting runs at every window of ``windows`` (the grid starts at 1). Each
  setting's window is chosen per batch size by the median tokens/s of its ``tuning_repeats``
  passes only; the figures reported for it come from its other ``repeats`` passes at that window,
  so the choice and the report use different repeats (a window picked on the timed passes would
  favour whichever window got lucky).
* Batch sizes ``batch_sizes`` (requests per ``generate`` call; 1 is always one of them).
* Per engine: one untimed warm-up pass per setting (largest batch size), then
  ``tuning_repeats + repeats`` rounds, each timing one pass of every setting at every batch size,
  interleaved so that machine load hits all of them alike. Reported: median tokens/s and seconds per
  problem (median pass seconds / problems).
* At batch size 1 each problem is timed on its own. The tokens/s ratio of every setting over
  ``sd_stock`` (and over the target alone; MAT and step-time ratios alike) is the ratio of summed
  tokens over summed seconds of per-problem medians over the timed repeats, with a 95% paired
  bootstrap interval over problems (:mod:`autojudge.evaluation.stats`, seeded). Batched passes time batches,
  not problems: they give tokens/s and seconds per problem, and no ratio.
* Accuracy: the first ``accuracy_problems`` problems of the split, decoded once per setting and
  window (untimed, at the largest batch size) and scored by the task; a setting's accuracy is at
  its batch-size-1 window. Its drop against the target alone and against ``sd_stock`` carries a
  paired bootstrap interval.
* A winner (the fastest setting at batch size 1; faster or slower than stock SD) is named only
  when its interval excludes 1; otherwise the report says "not distinguishable".
* GPU energy of every timed pass by :class:`~autojudge.bench.energy.PowerMeter` (or why not).

Engines: starts dominate on CPU (30-50 s each), so there is one engine for the target alone and
two per window. The plugin engine serves every plugin setting as a per-request rule override
(``exact``, or ``judge`` at a threshold; see :mod:`autojudge.vllm_plugin.engine`). The stock
engine (and the target-alone one) starts with ``VLLM_PLUGINS=""``: vLLM then loads no general
plugin in the engine-core and worker processes it starts, which are spawned rather than forked
for every engine here (a forked process would inherit the benchmark process's plugin hook; that
hook itself leaves an engine without a rule untouched). Stock engines get vLLM's default model
runner (``VLLM_USE_V2_MODEL_RUNNER`` as the caller set it, or unset), plugin engines the V1 runner
the plugin needs: every setting records its engine's runner, worker class and plugin state.

The judge's cost: step time of ``judge`` at threshold 0 (it accepts no mismatch, so it emits
exactly exact SD's tokens but computes the head at every step) against ``exact``, same engine.
Where AutoJudge's speedup is small, the step times explain it: a fit of stock SD's step time over
the windows gives the drafter's cost per draft token and the fixed (target verification) cost.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from autojudge.bench.energy import EnergyReading, PowerMeter, median_energy
from autojudge.errors import AutoJudgeError, InputError
from autojudge.evaluation.stats import mean_difference, mean_of_first, paired_bootstrap, rate_ratio, verdict
from autojudge.params import bench_plan_problems
from autojudge.tasks.base import Example, Task

TARGET = "target"
STOCK = "sd_stock"
EXACT = "sd_exact"
OVERHEAD = "judge_t0"
PLUGIN_ENABLED = "loaded, enabled"
PLUGIN_NOT_LOADED = "not loaded"
LABELS = {TARGET: "target alone", STOCK: "SD stock (vLLM)", EXACT: "SD exact (plugin)"}

# One decode call: prompts -> (generated tokens, target forward passes) per prompt.
DecodeFn = Callable[[Sequence[Sequence[int]]], list[tuple[list[int], int]]]


@dataclass(frozen=True)
class Setting:
    """A decoding setting: a rule override on a plugin engine, or a stock engine's own decoding (None)."""

    name: str
    override: dict[str, Any] | None = None
    threshold: float | None = None


def speculative_settings(thresholds: Sequence[float]) -> list[Setting]:
    """The plugin engine's settings: exact SD and AutoJudge at each threshold (overriding the head's own)."""
    judge = [
        Setting(f"autojudge_t{t:.4g}", {"rule": "judge", "threshold": t}, t) for t in sorted(set(thresholds))
    ]
    return [Setting(EXACT, {"rule": "exact"}), *judge]


OVERHEAD_SETTING = Setting(OVERHEAD, {"rule": "judge", "threshold": 0.0}, 0.0)
STOCK_SETTING = Setting(STOCK)


@dataclass
class Run:
    """One pass of a setting over the timed problems at one batch size."""

    batch_size: int
    tuning: bool  # a tuning pass: chooses the window, never reported
    seconds: float
    outputs: list[list[int]]
    passes: list[int]  # target forward passes per problem
    energy: EnergyReading
    problem_seconds: list[float] | None = None  # batch size 1: each problem timed on its own

    @property
    def tokens(self) -> int:
        return sum(len(tokens) for tokens in self.outputs)

    @property
    def target_passes(self) -> int:
        return sum(self.passes)


@dataclass
class Measured:
    """Runs by setting and batch size, accuracy-problem tokens by setting, and each setting's engine."""

    runs: dict[str, dict[int, list[Run]]] = field(default_factory=dict)
    accuracy: dict[str, list[list[int]]] = field(default_factory=dict)
    runners: dict[str, dict[str, str]] = field(default_factory=dict)

    def merged(self, other: Measured) -> Measured:
        return Measured(
            {**self.runs, **other.runs},
            {**self.accuracy, **other.accuracy},
            {**self.runners, **other.runners},
        )


def _pass(
    decode: DecodeFn, prompts: Sequence[Sequence[int]], batch_size: int
) -> tuple[list[tuple[list[int], int]], list[float] | None]:
    """Decode every prompt, ``batch_size`` per call; at batch size 1 also each problem's seconds."""
    results: list[tuple[list[int], int]] = []
    if batch_size == 1:
        seconds = []
        for prompt in prompts:
            started = time.perf_counter()
            results += decode([prompt])
            seconds.append(time.perf_counter() - started)
        return results, seconds
    for start in range(0, len(prompts), batch_size):
        results += decode(prompts[start : start + batch_size])
    return results, None


def measure(
    decoders: dict[str, DecodeFn],
    prompts: Sequence[Sequence[int]],
    accuracy_prompts: Sequence[Sequence[int]],
    batch_sizes: Sequence[int],
    tuning_repeats: int,
    repeats: int,
    meter: Callable[[], PowerMeter],
) -> Measured:
    """A warm-up pass per decoder, ``tuning_repeats`` then ``repeats`` interleaved rounds, then the accuracy pass."""
    largest = max(batch_sizes)
    for decode in decoders.values():
        _pass(decode, prompts, largest)
    measured = Measured({name: {size: [] for size in batch_sizes} for name in decoders})
    for round_index in range(tuning_repeats + repeats):
        for name, decode in decoders.items():
            for size in batch_sizes:
                with meter() as power:
                    started = time.perf_counter()
                    results, problem_seconds = _pass(decode, prompts, size)
                    seconds = time.perf_counter() - started
                measured.runs[name][size].append(
                    Run(
                        batch_size=size,
                        tuning=round_index < tuning_repeats,
                        seconds=seconds,
                        outputs=[tokens for tokens, _ in results],
                        passes=[passes for _, passes in results],
                        energy=power.reading,
                        problem_seconds=problem_seconds,
                    )
                )
    for name, decode in decoders.items():  # untimed
        results, _ = _pass(decode, accuracy_prompts, largest)
        measured.accuracy[name] = [tokens for tokens, _ in results]
    return measured


def _timed(runs: list[Run]) -> list[Run]:
    timed = [run for run in runs if not run.tuning]
    if not timed:
        raise ValueError("no timed runs (every run is a tuning run)")
    return timed


def summarize_runs(runs: list[Run]) -> dict[str, Any]:
    """Medians over the timed runs; the tuning runs' median tokens/s; whether every run gave the same tokens."""
    timed, tuning = _timed(runs), [run for run in runs if run.tuning]
    first = timed[0]
    seconds = statistics.median(run.seconds for run in timed)
    return {
        "tokens_per_s": round(statistics.median(run.tokens / run.seconds for run in timed), 2),
        "seconds_per_problem": round(seconds / len(first.outputs), 5),
        "median_seconds": round(seconds, 4),
        "seconds_per_repeat": [round(run.seconds, 4) for run in timed],
        "tuning_tokens_per_s": (
            round(statistics.median(run.tokens / run.seconds for run in tuning), 2) if tuning else None
        ),
        "tuning_seconds_per_repeat": [round(run.seconds, 4) for run in tuning],
        "tokens": first.tokens,
        "target_passes": first.target_passes,
        "mat": round(first.tokens / first.target_passes, 4) if first.target_passes else None,
        "step_ms": (  # a step is one target pass of one request: batch size 1 only
            round(1000 * seconds / first.target_passes, 4)
            if first.batch_size == 1 and first.target_passes
            else None
        ),
        "same_tokens_every_repeat": all(run.outputs == first.outputs for run in runs),
        "energy": median_energy([run.energy for run in timed], first.tokens),
    }


def per_problem(runs: list[Run]) -> dict[str, list[float] | list[int]]:
    """Batch size 1: each problem's median seconds over the timed runs, its tokens and target passes."""
    timed = _timed(runs)
    if any(run.problem_seconds is None for run in timed):
        raise ValueError("per-problem seconds exist at batch size 1 only")
    first = timed[0]
    return {
        "seconds": [
            round(statistics.median(run.problem_seconds[i] for run in timed), 6)  # type: ignore[index]
            for i in range(len(first.outputs))
        ],
        "tokens": [len(tokens) for tokens in first.outputs],
        "passes": list(first.passes),
    }


def choose_window(summaries: dict[int, dict[str, Any]]) -> int:
    """The window whose tuning passes were fastest (median tokens/s); a tie goes to the smaller window."""
    return max(sorted(summaries), key=lambda window: summaries[window]["tuning_tokens_per_s"])


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


def _round(threshold: float) -> float:
    return float(f"{threshold:.4g}")


def _threshold(name: str) -> float:
    return float(name.removeprefix("autojudge_t"))


def _setting_order(name: str) -> tuple[int, float]:
    """Stock SD, plugin exact SD, then AutoJudge by threshold."""
    if name.startswith("autojudge_t"):
        return 2, _threshold(name)
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


def _first_timed(measured: Measured, name: str) -> list[list[int]]:
    """The tokens of the first timed batch-size-1 pass of setting ``name``."""
    return _timed(measured.runs[name][1])[0].outputs


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
        chosen = {size: choose_window({w: s[size] for w, s in summaries[name].items()}) for size in sizes}
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
    target_tokens = _first_timed(target, TARGET)
    for name, figures in settings.items():
        window = figures["windows"]["1"]
        figures["speedup_vs_target_bs1"] = rate_comparison(
            figures["bs1_problems"], target_figures["bs1_problems"], "tokens", "seconds", bench
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
            "same_tokens_as_exact": _first_timed(at_overhead, OVERHEAD) == _first_timed(at_overhead, EXACT),
        },
        "sd_stock_equals_target": {
            str(w): _first_timed(m, STOCK) == target_tokens for w, m in sorted(by_window.items())
        },
        "sd_exact_equals_target": {
            str(w): _first_timed(m, EXACT) == target_tokens for w, m in sorted(by_window.items())
        },
    }
    head_name = next(
        n for n in settings if n.startswith("autojudge_t") and _threshold(n) == _round(head_threshold)
    )
    head = settings[head_name]
    report["headline"] = {
        "autojudge_setting": head_name,
        "registered_threshold": _round(head_threshold),
        "autojudge_window": head["windows"]["1"],
        "stock_window": stock["windows"]["1"],
        "exact_window": settings[EXACT]["windows"]["1"],
        "tokens_per_s_ratio_vs_stock": head["speedup_vs_stock_bs1"],
        "tokens_per_s_ratio_vs_exact": rate_comparison(
            head["bs1_problems"], settings[EXACT]["bs1_problems"], "tokens", "seconds", bench
        ),
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


def _ci(figures: dict[str, Any], digits: int = 2) -> str:
    """``point [low, high]``."""
    return f"{figures['point']:.{digits}f} [{figures['low']:.{digits}f}, {figures['high']:.{digits}f}]"


def _signed_ci(figures: dict[str, Any]) -> str:
    return f"{figures['point']:+.1f} [{figures['low']:+.1f}, {figures['high']:+.1f}]"


def _runner_text(runner: dict[str, str] | None) -> str:
    if not runner:
        return "-"
    return f"{runner['runner'].split(' (')[0]}, {runner['worker_cls'].rsplit('.', 1)[-1]}, plugin {runner['plugin']}"


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
        f"AutoJudge raises tokens per target pass (MAT) {_ci(headline['mat_ratio_vs_stock'])}x over stock SD "
        f"({stock_bs1['mat']:.2f} at W={stock_w} -> {head_bs1['mat']:.2f} at W={head_w}), "
        f"but its steps take {_ci(headline['step_time_ratio_vs_stock'])}x as long "
        f"({stock_bs1['step_ms']:.2f} -> {head_bs1['step_ms']:.2f} ms), so tokens/s gain only "
        f"{_ci(ratio)}x (95% intervals). The target alone takes {target_step:.2f} ms per token."
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


def _setting_label(name: str) -> tuple[str, Any]:
    """The table's setting and threshold columns."""
    if name in LABELS:
        return LABELS[name], "-"
    return "AutoJudge", _threshold(name)


def _display_name(name: str) -> str:
    label, threshold = _setting_label(name)
    return label if threshold == "-" else f"{label} at threshold {threshold}"


def speed_table(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The card's speed table: one row per setting at its chosen windows (batch size 1 first)."""
    sizes = [str(size) for size in sorted(report["batch_sizes"])]
    rows = []
    for name, figures in [(TARGET, report["target"]), *report["settings"].items()]:
        label, threshold = _setting_label(name)
        accuracy = figures["accuracy"]
        row: dict[str, Any] = {
            "setting": label,
            "threshold": threshold,
            f"window (bs {'/'.join(sizes)})": (
                "-" if name == TARGET else "/".join(str(figures["windows"][size]) for size in sizes)
            ),
            "accuracy, % [95% CI]": _ci(accuracy["percent"], 1),
            "drop vs target, points [95% CI]": (
                "-" if name == TARGET else _signed_ci(accuracy["drop_vs_target_points"])
            ),
        }
        for size in sizes:
            row[f"tokens/s bs {size}"] = figures["by_batch"][size]["tokens_per_s"]
            row[f"s/problem bs {size}"] = figures["by_batch"][size]["seconds_per_problem"]
        row["speedup over stock SD, bs 1 [95% CI]"] = _ci(figures["speedup_vs_stock_bs1"], 3)
        row["runner"] = _runner_text(figures["runner"])
        rows.append(row)
    return rows


def energy_table(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The card's energy table (batch size 1): joules per pass and per 1,000 tokens, or why not available."""
    entries = [(LABELS[TARGET], report["target"]["by_batch"]["1"])]
    entries += [
        (_display_name(name), figures["by_batch"]["1"]) for name, figures in report["settings"].items()
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
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def check_plan(bench: Any, split_problems: int | None = None) -> None:
    """Refuse a benchmark plan that cannot produce its figures (``split_problems``: what the split holds)."""
    problems = bench_plan_problems(bench)
    needed = max(bench.problems, bench.accuracy_problems)
    if split_problems is not None and split_problems < needed:
        problems.append(
            f"bench.problems {bench.problems} and bench.accuracy_problems {bench.accuracy_problems} need "
            f"{needed} problems, but split {bench.split!r} has {split_problems}"
        )
    if problems:
        raise InputError("; ".join(problems))


def header(bench: Any, problems: int, accuracy_problems: int) -> dict[str, Any]:
    """What was run, on which machine, when."""
    import platform

    return {
        "benchmark": "vLLM tokens/s: target alone, stock SD, plugin exact SD, AutoJudge; windows chosen on tuning passes",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": platform.processor() or platform.machine(),
        "problems": problems,
        "accuracy_problems": accuracy_problems,
        "windows": list(bench.windows),
        "batch_sizes": sorted(bench.batch_sizes),
        "tuning_repeats": bench.tuning_repeats,
        "repeats": bench.repeats,
        "bootstrap_samples": bench.bootstrap_samples,
        "seed": bench.seed,
    }


def _eos_token_ids(target: Path, tokenizer: Any) -> set[int]:
    """The pair's EOS ids (`autojudge.models.pair.eos_token_ids`) without loading the weights."""
    from transformers import GenerationConfig

    from autojudge.models.pair import eos_token_ids

    try:
        generation_eos = GenerationConfig.from_pretrained(str(target)).eos_token_id
    except OSError:  # no generation_config.json
        generation_eos = None
    return eos_token_ids(tokenizer, generation_eos)


# Environment variables an engine start may change or read; restored after every start.
ENGINE_ENVIRONMENT = ("VLLM_PLUGINS", "VLLM_WORKER_MULTIPROC_METHOD", "VLLM_USE_V2_MODEL_RUNNER")


@contextmanager
def engine_environment(plugin: bool) -> Iterator[None]:
    """The environment an engine starts in: spawned processes; without ``plugin``, no general plugin loaded.

    vLLM reads ``VLLM_PLUGINS`` in the engine-core and worker processes it starts during the
    engine's construction, so it only needs to be set while the engine starts. The variables the
    plugin reads (``AUTOJUDGE_VLLM_*``) are removed for an engine without it, and every variable is
    restored afterwards (``speculative_llm`` sets ``VLLM_USE_V2_MODEL_RUNNER=0`` for plugin engines
    only, so a stock engine gets vLLM's default runner).
    """
    names = [*ENGINE_ENVIRONMENT, *(name for name in os.environ if name.startswith("AUTOJUDGE_VLLM_"))]
    saved = {name: os.environ.get(name) for name in names}
    os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"
    if not plugin:
        os.environ["VLLM_PLUGINS"] = ""
        for name in names:
            if name.startswith("AUTOJUDGE_VLLM_"):
                del os.environ[name]
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def runner_record(vllm_config: Any, plugin: bool) -> dict[str, str]:
    """The engine's model runner, worker class and plugin state (read while its environment holds)."""
    from autojudge.vllm_plugin.compat import runner_of
    from autojudge.vllm_plugin.patches import JUDGE_WORKER

    worker = str(vllm_config.parallel_config.worker_cls)
    if plugin != (worker == JUDGE_WORKER):
        raise AutoJudgeError(
            f"bench: an engine {'with' if plugin else 'without'} the plugin started with worker {worker}"
        )
    return {
        "runner": runner_of(vllm_config),
        "worker_cls": worker,
        "plugin": PLUGIN_ENABLED if plugin else PLUGIN_NOT_LOADED,
    }


def run_benchmark(params: Any, head_path: Path) -> dict[str, Any]:
    """Start the engines of ``params.bench``, measure every setting, and return the report."""
    bench, vllm = params.bench, params.mining.vllm
    check_plan(bench)
    from vllm.plugins import load_general_plugins

    from autojudge.engines.vllm_engine import VllmEngine
    from autojudge.models.pair import load_tokenizer
    from autojudge.models.prompts import encode_prompt
    from autojudge.models.runtime import task_from
    from autojudge.vllm_plugin.engine import decode, speculative_llm
    from autojudge.vllm_plugin.heads import hidden_size, load_checked_head

    target_dir, draft_dir = params.pair.target, params.pair.draft
    # refuse a head the plugin cannot use before any engine starts
    head = load_checked_head(
        str(head_path), target_dir, draft_dir, hidden_size(target_dir), hidden_size(draft_dir)
    )
    task = task_from(params)
    examples = task.load_split(bench.split, max(bench.problems, bench.accuracy_problems))
    check_plan(bench, len(examples))
    tokenizer = load_tokenizer(params.pair.target, "target")
    prompts = [encode_prompt(tokenizer, task.build_prompt(e), params.pair.chat_template) for e in examples]
    timed, accuracy_prompts = prompts[: bench.problems], prompts[: bench.accuracy_problems]
    eos = _eos_token_ids(params.pair.target, tokenizer)
    max_new = params.decoding.max_new_tokens
    sizes = sorted(bench.batch_sizes)
    engine_kwargs = {"tensor_parallel_size": vllm.tensor_parallel_size, **vllm.engine_kwargs}

    def meter() -> PowerMeter:
        return PowerMeter(bench.meter_interval)

    def run(decoders: dict[str, DecodeFn], tuning: int) -> Measured:
        return measure(decoders, timed, accuracy_prompts, sizes, tuning, bench.repeats, meter)

    def spec_llm(window: int, rule_config: dict[str, Any] | None) -> Any:
        return speculative_llm(
            target_dir, draft_dir, window, rule_config, engine_kwargs, params.pair.dtype, vllm.max_model_len
        )

    started, load_before = time.perf_counter(), os.getloadavg()[0]
    load_general_plugins()  # this process registers the plugin's hook now, before VLLM_PLUGINS is narrowed
    with engine_environment(plugin=False):
        engine = VllmEngine(
            target_dir,
            params.pair.dtype,
            eos,
            vllm.max_model_len,
            vllm.tensor_parallel_size,
            engine_kwargs=vllm.engine_kwargs,
        )
        target_runner = runner_record(engine.llm.llm_engine.vllm_config, plugin=False)
    try:
        target_decode: DecodeFn = lambda batch: [  # noqa: E731 -- a target pass per token
            (tokens, len(tokens)) for tokens in engine.continue_prefixes(list(batch), [max_new] * len(batch))
        ]
        target = run({TARGET: target_decode}, 0)  # no window to choose: no tuning passes
        target.runners[TARGET] = target_runner
    finally:
        engine.close()
    plugin_settings = speculative_settings([head.threshold, *bench.thresholds])
    by_window: dict[int, Measured] = {}
    for window in bench.windows:
        with engine_environment(plugin=True):
            llm = spec_llm(window, {"rule": "judge", "judge_head": str(head_path)})
            runner = runner_record(llm.llm_engine.vllm_config, plugin=True)
        try:
            chosen = plugin_settings + ([OVERHEAD_SETTING] if window == bench.overhead_window else [])
            plugin = run(
                {s.name: _speculative_decoder(decode, llm, max_new, eos, s.override) for s in chosen},
                bench.tuning_repeats,
            )
            plugin.runners = {s.name: runner for s in chosen}
        finally:
            llm.llm_engine.engine_core.shutdown()
        with engine_environment(plugin=False):
            llm = spec_llm(window, None)
            runner = runner_record(llm.llm_engine.vllm_config, plugin=False)
        try:
            stock = run({STOCK: _speculative_decoder(decode, llm, max_new, eos, None)}, bench.tuning_repeats)
            stock.runners = {STOCK: runner}
        finally:
            llm.llm_engine.engine_core.shutdown()
        by_window[window] = plugin.merged(stock)
    report = header(bench, len(timed), len(accuracy_prompts))
    report.update(
        build_report(
            task, tokenizer, examples[: bench.accuracy_problems], target, by_window, head.threshold, bench
        )
    )
    report["pair"], report["task"] = params.pair.name, params.task.name
    report["head"] = {"path": str(head_path), "threshold": head.threshold, "features": head.features.source}
    report["runtime_seconds"] = round(time.perf_counter() - started, 1)
    report["cpus"], report["load_average_1m"] = os.cpu_count(), [load_before, os.getloadavg()[0]]
    report["engine_starts"] = 1 + 2 * len(bench.windows)
    return report


def _speculative_decoder(
    decode: Callable[..., Any], llm: Any, max_new: int, eos: set[int], override: dict[str, Any] | None
) -> DecodeFn:
    return lambda batch: [
        (r.tokens, r.target_passes) for r in decode(llm, batch, max_new, eos, override=override)
    ]


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


def card_section(report: dict[str, Any]) -> dict[str, Any]:
    """What the head's card shows of the benchmark: headline, judge overhead, speed and energy tables."""
    return {
        **{key: report[key] for key in CARD_KEYS},
        "speed": speed_table(report),
        "energy": energy_table(report),
    }


def _ratio_sentence(figures: dict[str, Any]) -> str:
    return f"{_ci(figures)}x ({figures['verdict']})"


def section_markdown(section: dict[str, Any]) -> list[str]:
    """Protocol, headline with intervals, speed and energy tables, and (when short of the ratio) why."""
    headline, overhead = section["headline"], section["judge_overhead"]
    fastest = headline["fastest_bs1"]
    runner_up, best = _display_name(fastest["runner_up"]), _display_name(fastest["highest_point"])
    if fastest["setting"] is not None:
        winner = f"**{best}** ({_ci(fastest['ratio_over_runner_up'])}x the runner-up, {runner_up})"
    else:
        winner = (
            f"none named ({best} leads {runner_up} by {_ci(fastest['ratio_over_runner_up'])}x, "
            "an interval that includes 1)"
        )
    overhead_ci = overhead["percent_interval"]
    lines = [
        f"{section['date']}, {section['machine']}: {section['problems']} timed problems at batch sizes "
        f"{section['batch_sizes']}. Per setting and batch size, the window (of {section['windows']}) is the "
        f"fastest on {section['tuning_repeats']} tuning pass(es); the figures are medians of "
        f"{section['repeats']} further timed pass(es) at that window, after a warm-up. Accuracy on the first "
        f"{section['accuracy_problems']} problems (largest batch size, untimed). Intervals: 95% paired "
        "bootstrap over problems "
        f"({section['bootstrap_samples']} samples, seed {section['seed']}).",
        "",
        f"AutoJudge at the registered threshold {headline['registered_threshold']} "
        f"(W={headline['autojudge_window']}) against stock vLLM SD (W={headline['stock_window']}), "
        f"batch size 1: **{_ratio_sentence(headline['tokens_per_s_ratio_vs_stock'])} tokens/s** "
        f"(MAT {_ci(headline['mat_ratio_vs_stock'])}x); against plugin exact SD "
        f"(W={headline['exact_window']}) {_ratio_sentence(headline['tokens_per_s_ratio_vs_exact'])}. "
        f"Plugin exact SD against stock SD: {_ratio_sentence(headline['exact_vs_stock'])}. "
        f"Accuracy drop against the target alone **{_signed_ci(headline['accuracy_drop_vs_target_points'])} "
        f"points** ({headline['accuracy_drop_vs_target_points']['verdict']}), against stock SD "
        f"{_signed_ci(headline['accuracy_drop_vs_stock_points'])}. Judge overhead: "
        f"**{_signed_ci(overhead_ci)}%** of step time (judge at threshold 0 vs exact, W={overhead['window']}). "
        f"Fastest at batch size 1: {winner}.",
        "",
        "### Speed (vLLM)",
        "",
        markdown(section["speed"]),
        "",
        "### Energy (batch size 1, one pass over the problems)",
        "",
        markdown(section["energy"]),
    ]
    if headline["why_below_min_ratio"]:
        lines += [
            "",
            f"### Why the ratio is below {headline['min_ratio']}",
            "",
            headline["why_below_min_ratio"],
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
    from autojudge.io import write_json, write_text

    write_json(metrics, report)
    rows = curve_rows(report)
    write_csv(curve.with_suffix(".csv"), rows)
    plot_tokens_per_s(curve.with_suffix(".png"), rows, f"vLLM, {report['problems']} problems")
    write_text(markdown_path, report_markdown(report))
