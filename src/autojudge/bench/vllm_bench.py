"""Tokens/s with vLLM: target alone, speculative decoding (exact) and AutoJudge at several thresholds.

Protocol (the AutoJudge paper, section 4.3 and appendix G):

* Every speculative setting runs at every window of ``windows``; each setting reports its best
  window by tokens/s at batch size 1 (tuned separately, so exact SD is not handicapped by a window
  made for AutoJudge). The paper's grid for real models is 6..64 ([6, 8, 10, 12, 14, 16, 20, 24,
  26, 28, 32, 40, 48, 54, 64]); the toy default is short to keep ``dvc repro`` short.
* Batch size 1 (one request at a time) and one batched setting (``batch_size`` requests per call).
* One untimed warm-up pass per setting, then ``repeats`` timed passes, interleaved across the
  settings of an engine so that machine load hits all of them alike; medians are reported.
* Accuracy of each setting on the same problems (scored by the task); GPU energy of every timed
  pass by :class:`~autojudge.bench.energy.PowerMeter` (or why it is not available).

Engine starts dominate on CPU (30-50 s each), so there is one engine for the target alone and one
per window for all speculative settings: the plugin is on in those engines and each setting is a
per-request rule override (``exact``, or ``judge`` at a threshold), see
:mod:`autojudge.vllm_plugin.engine`. Exact SD therefore runs through the plugin's exact rule
(identical tokens to vLLM's own verification, which the test suite checks against target greedy).

The judge's cost: step time of ``judge`` at threshold 0 (it accepts no mismatch, so it emits
exactly exact SD's tokens but computes the head at every step) against ``exact``, same engine.
Where AutoJudge's speedup is small, the step times explain it: a fit of exact SD's step time over
the windows gives the drafter's cost per draft token and the fixed (target verification) cost.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from autojudge.bench.energy import EnergyReading, PowerMeter, median_energy
from autojudge.errors import InputError
from autojudge.tasks.base import Example, Task

MODES = ("bs1", "batched")
EXACT = "sd_exact"
OVERHEAD = "judge_t0"

# One decode call: prompts -> (generated tokens, target forward passes) per prompt.
DecodeFn = Callable[[Sequence[Sequence[int]]], list[tuple[list[int], int]]]


@dataclass(frozen=True)
class Setting:
    """A decoding setting: a rule override on a speculative engine, or the target alone (None)."""

    name: str
    override: dict[str, Any] | None = None
    threshold: float | None = None


def speculative_settings(thresholds: Sequence[float]) -> list[Setting]:
    """Exact SD and AutoJudge at each threshold (the judge's threshold overrides the head's own)."""
    judge = [
        Setting(f"autojudge_t{t:.4g}", {"rule": "judge", "threshold": t}, t) for t in sorted(set(thresholds))
    ]
    return [Setting(EXACT, {"rule": "exact"}), *judge]


OVERHEAD_SETTING = Setting(OVERHEAD, {"rule": "judge", "threshold": 0.0}, 0.0)


@dataclass
class Run:
    """One timed pass of a setting over all problems in one mode."""

    seconds: float
    tokens: int
    target_passes: int
    outputs: list[list[int]]
    energy: EnergyReading


@dataclass
class Measured:
    """Every timed run of the settings of one engine, by setting name and mode."""

    runs: dict[str, dict[str, list[Run]]] = field(default_factory=dict)


def _pass(
    decode: DecodeFn, prompts: list[list[int]], mode: str, batch_size: int
) -> list[tuple[list[int], int]]:
    size = 1 if mode == "bs1" else batch_size
    results: list[tuple[list[int], int]] = []
    for start in range(0, len(prompts), size):
        results += decode(prompts[start : start + size])
    return results


def measure(
    decoders: dict[str, DecodeFn],
    prompts: list[list[int]],
    repeats: int,
    batch_size: int,
    meter: Callable[[], PowerMeter],
) -> Measured:
    """Warm up every decoder once, then ``repeats`` rounds of timed passes, interleaved."""
    for decode in decoders.values():
        _pass(decode, prompts, "batched", batch_size)
    measured = Measured({name: {mode: [] for mode in MODES} for name in decoders})
    for _ in range(repeats):
        for name, decode in decoders.items():
            for mode in MODES:
                with meter() as power:
                    started = time.perf_counter()
                    results = _pass(decode, prompts, mode, batch_size)
                    seconds = time.perf_counter() - started
                measured.runs[name][mode].append(
                    Run(
                        seconds=seconds,
                        tokens=sum(len(tokens) for tokens, _ in results),
                        target_passes=sum(passes for _, passes in results),
                        outputs=[tokens for tokens, _ in results],
                        energy=power.reading,
                    )
                )
    return measured


def summarize_runs(runs: list[Run], task: Task, examples: list[Example], tokenizer: Any) -> dict[str, Any]:
    """Medians over repeats, accuracy of the first run, and whether every repeat gave the same tokens."""
    seconds = statistics.median(run.seconds for run in runs)
    first = runs[0]
    responses = [tokenizer.decode(tokens, skip_special_tokens=True) for tokens in first.outputs]
    correct = sum(
        task.score(response, example) for response, example in zip(responses, examples, strict=True)
    )
    return {
        "tokens_per_s": round(statistics.median(run.tokens / run.seconds for run in runs), 2),
        "median_seconds": round(seconds, 4),
        "seconds_per_repeat": [round(run.seconds, 4) for run in runs],
        "tokens": first.tokens,
        "target_passes": first.target_passes,
        "mat": round(first.tokens / first.target_passes, 4) if first.target_passes else None,
        "step_ms": round(1000 * seconds / first.target_passes, 4) if first.target_passes else None,
        "accuracy": correct / len(examples),
        "same_tokens_every_repeat": all(run.outputs == first.outputs for run in runs),
        "energy": median_energy([run.energy for run in runs], first.tokens),
    }


def step_cost_fit(step_ms_by_window: dict[int, float]) -> dict[str, float] | None:
    """Least-squares ``step_ms = fixed + per_draft_token * W`` over exact SD's windows (None below 2)."""
    if len(step_ms_by_window) < 2:
        return None
    windows, steps = list(step_ms_by_window), list(step_ms_by_window.values())
    slope, intercept = statistics.linear_regression(windows, steps)
    return {"fixed_ms": round(intercept, 4), "per_draft_token_ms": round(slope, 4)}


def _best_window(per_window: dict[int, dict[str, Any]]) -> int:
    return max(per_window, key=lambda w: per_window[w]["bs1"]["tokens_per_s"])


def _explain(report: dict[str, Any], ratio: float, minimum: float) -> str | None:
    """Why the AutoJudge/SD tokens/s ratio falls short of ``minimum``, from measured step times."""
    if ratio >= minimum:
        return None
    head, sd = report["settings"][report["headline"]["autojudge_setting"]], report["settings"][EXACT]
    target_step = report["target"]["bs1"]["step_ms"]
    fit = report["step_cost"]
    mat_gain = head["bs1"]["mat"] / sd["bs1"]["mat"]
    step_ratio = head["bs1"]["step_ms"] / sd["bs1"]["step_ms"]
    text = (
        f"AutoJudge raises tokens per target pass (MAT) {mat_gain:.2f}x over exact SD "
        f"({sd['bs1']['mat']:.2f} at W={sd['window']} -> {head['bs1']['mat']:.2f} at W={head['window']}), "
        f"but its steps take {step_ratio:.2f}x as long ({sd['bs1']['step_ms']:.2f} -> "
        f"{head['bs1']['step_ms']:.2f} ms), so tokens/s gain only {ratio:.2f}x. "
        f"The target alone takes {target_step:.2f} ms per token."
    )
    if fit is not None:
        per_token, fixed = fit["per_draft_token_ms"], fit["fixed_ms"]
        text += (
            f" Exact SD's step time over the windows fits {fixed:.2f} ms + {per_token:.3f} ms per draft "
            f"token: one draft forward costs {per_token / target_step:.2f} of a target-alone step, so "
            f"a step with W={head['window']} drafts spends {per_token * head['window']:.2f} ms drafting "
            f"against {fixed:.2f} ms fixed (target verification and engine overhead): the longer "
            "accepted runs are paid for in draft forwards."
        )
    return text


def build_report(
    task: Task,
    examples: list[Example],
    tokenizer: Any,
    target: Measured,
    by_window: dict[int, Measured],
    head_threshold: float,
    overhead_window: int,
    min_ratio: float,
) -> dict[str, Any]:
    """The benchmark's results: per setting and window, tuned windows, headline figures."""
    target_summary = {
        mode: summarize_runs(runs, task, examples, tokenizer) for mode, runs in target.runs["target"].items()
    }
    target_tokens = target.runs["target"]["bs1"][0].outputs
    windows: dict[str, dict[int, dict[str, Any]]] = {}
    for window, measured in by_window.items():
        for name, modes in measured.runs.items():
            windows.setdefault(name, {})[window] = {
                mode: summarize_runs(runs, task, examples, tokenizer) for mode, runs in modes.items()
            }
    sd_identical = {
        window: measured.runs[EXACT]["bs1"][0].outputs == target_tokens
        for window, measured in by_window.items()
    }
    settings = {}
    for name, per_window in windows.items():
        if name == OVERHEAD:
            continue
        best = _best_window(per_window)
        settings[name] = {"window": best, **per_window[best]}
    head_name = next(
        n for n in settings if n.startswith("autojudge_t") and _threshold(n) == _round(head_threshold)
    )
    sd, head = settings[EXACT], settings[head_name]
    for figures in settings.values():
        figures["speedup_over_sd"] = round(figures["bs1"]["tokens_per_s"] / sd["bs1"]["tokens_per_s"], 3)
        figures["speedup_over_target"] = round(
            figures["bs1"]["tokens_per_s"] / target_summary["bs1"]["tokens_per_s"], 3
        )
    exact_w, judge_w = windows[EXACT][overhead_window]["bs1"], windows[OVERHEAD][overhead_window]["bs1"]
    ratio = head["bs1"]["tokens_per_s"] / sd["bs1"]["tokens_per_s"]
    report: dict[str, Any] = {
        "target": target_summary,
        "settings": settings,
        "by_window": {name: {str(w): f for w, f in per.items()} for name, per in windows.items()},
        "step_cost": step_cost_fit({w: f["bs1"]["step_ms"] for w, f in windows[EXACT].items()}),
        "judge_overhead": {
            "window": overhead_window,
            "exact_step_ms": exact_w["step_ms"],
            "judge_t0_step_ms": judge_w["step_ms"],
            "percent": round(100 * (judge_w["step_ms"] / exact_w["step_ms"] - 1), 2),
            "same_tokens_as_exact": (
                by_window[overhead_window].runs[OVERHEAD]["bs1"][0].outputs
                == by_window[overhead_window].runs[EXACT]["bs1"][0].outputs
            ),
        },
        "sd_exact_equals_target": sd_identical,
        "headline": {
            "autojudge_setting": head_name,
            "registered_threshold": _round(head_threshold),
            "autojudge_window": head["window"],
            "sd_window": sd["window"],
            "tokens_per_s_ratio_vs_sd": round(ratio, 3),
            "mat_ratio_vs_sd": round(
                head["bs1"]["mat"] / sd["bs1"]["mat"], 3
            ),  # the ratio's ceiling at equal step time
            "batched_tokens_per_s_ratio_vs_sd": round(
                head["batched"]["tokens_per_s"] / sd["batched"]["tokens_per_s"], 3
            ),
            "accuracy_drop_vs_sd_points": round(100 * (sd["bs1"]["accuracy"] - head["bs1"]["accuracy"]), 2),
            "min_ratio": min_ratio,
        },
    }
    report["headline"]["why_below_min_ratio"] = _explain(report, ratio, min_ratio)
    report["headline"]["judge_overhead_percent"] = report["judge_overhead"]["percent"]
    return report


def _round(threshold: float) -> float:
    return float(f"{threshold:.4g}")


def _threshold(name: str) -> float:
    return float(name.removeprefix("autojudge_t"))


def speed_table(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The card's speed table: one row per setting at its tuned window."""
    target = report["target"]
    rows = [
        {
            "setting": "target alone",
            "threshold": "-",
            "window": "-",
            "accuracy, %": round(100 * target["bs1"]["accuracy"], 1),
            "tokens/s (bs 1)": target["bs1"]["tokens_per_s"],
            f"tokens/s (bs {report['batch_size']})": target["batched"]["tokens_per_s"],
            "MAT": "-",
            "speedup over SD": round(
                target["bs1"]["tokens_per_s"] / report["settings"][EXACT]["bs1"]["tokens_per_s"], 3
            ),
        }
    ]
    for name, figures in report["settings"].items():
        rows.append(
            {
                "setting": "SD exact" if name == EXACT else "AutoJudge",
                "threshold": "-" if name == EXACT else _threshold(name),
                "window": figures["window"],
                "accuracy, %": round(100 * figures["bs1"]["accuracy"], 1),
                "tokens/s (bs 1)": figures["bs1"]["tokens_per_s"],
                f"tokens/s (bs {report['batch_size']})": figures["batched"]["tokens_per_s"],
                "MAT": figures["bs1"]["mat"],
                "speedup over SD": figures["speedup_over_sd"],
            }
        )
    return rows


def energy_table(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The card's energy table (batch size 1): joules per pass and per 1,000 tokens, or why not available."""
    entries = [("target alone", report["target"]["bs1"])]
    entries += [(name, figures["bs1"]) for name, figures in report["settings"].items()]
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
    """tokens/s by setting and window, for the DVC plot."""
    return [
        {
            "setting": name,
            "window": int(window),
            "tokens_per_s": figures["bs1"]["tokens_per_s"],
            "tokens_per_s_batched": figures["batched"]["tokens_per_s"],
            "accuracy": figures["bs1"]["accuracy"],
            "mat": figures["bs1"]["mat"],
        }
        for name, per_window in report["by_window"].items()
        for window, figures in per_window.items()
    ]


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


def check_plan(windows: Sequence[int], overhead_window: int, repeats: int, problems: int) -> None:
    """Refuse a benchmark plan that cannot produce its figures."""
    if not windows or any(w < 1 for w in windows):
        raise InputError(f"bench.windows must be positive draft windows, got {list(windows)}")
    if overhead_window not in windows:
        raise InputError(
            f"bench.overhead_window {overhead_window} must be one of bench.windows {list(windows)}"
        )
    if repeats < 1 or problems < 1:
        raise InputError(f"bench: repeats and problems must be >= 1, got {repeats} and {problems}")


def header(settings: Any, problems: int) -> dict[str, Any]:
    """What was run, on which machine, when."""
    import platform

    return {
        "benchmark": "vLLM tokens/s: target alone, SD exact, AutoJudge; windows tuned per setting",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": platform.processor() or platform.machine(),
        "problems": problems,
        "windows": list(settings.windows),
        "repeats": settings.repeats,
        "batch_size": settings.batch_size,
    }


def _eos_token_ids(target: Path, tokenizer: Any) -> set[int]:
    """The tokenizer's EOS and the target's generation-config EOS ids (without loading the weights)."""
    from transformers import GenerationConfig

    ids = {tokenizer.eos_token_id}
    try:
        generation_eos = GenerationConfig.from_pretrained(str(target)).eos_token_id
    except OSError:  # no generation_config.json
        generation_eos = None
    ids.update([generation_eos] if isinstance(generation_eos, int) else generation_eos or [])
    return {i for i in ids if i is not None}


def run_benchmark(params: Any, head_path: Path) -> dict[str, Any]:
    """Start the engines of ``params.bench``, measure every setting, and return the report."""
    from autojudge.engines.vllm_engine import VllmEngine
    from autojudge.models.pair import load_tokenizer
    from autojudge.models.prompts import encode_prompt
    from autojudge.runtime import task_from
    from autojudge.vllm_plugin.engine import decode, speculative_llm
    from autojudge.vllm_plugin.heads import hidden_size, load_checked_head

    bench, vllm = params.bench, params.mining.vllm
    target_dir, draft_dir = params.pair.target, params.pair.draft
    # refuse a head the plugin cannot use before any engine starts
    head = load_checked_head(
        str(head_path), target_dir, draft_dir, hidden_size(target_dir), hidden_size(draft_dir)
    )
    task = task_from(params)
    examples = task.load_split(bench.split, bench.problems)
    check_plan(bench.windows, bench.overhead_window, bench.repeats, len(examples))
    tokenizer = load_tokenizer(params.pair.target, "target")
    prompts = [encode_prompt(tokenizer, task.build_prompt(e), params.pair.chat_template) for e in examples]
    eos = _eos_token_ids(params.pair.target, tokenizer)
    max_new = params.decoding.max_new_tokens

    def meter() -> PowerMeter:
        return PowerMeter(bench.meter_interval)

    started, load_before = time.perf_counter(), os.getloadavg()[0]
    engine = VllmEngine(
        params.pair.target,
        params.pair.dtype,
        eos,
        vllm.max_model_len,
        vllm.tensor_parallel_size,
        engine_kwargs=vllm.engine_kwargs,
    )
    try:
        target_decode: DecodeFn = lambda batch: [  # noqa: E731 -- a target pass per token
            (tokens, len(tokens)) for tokens in engine.continue_prefixes(list(batch), [max_new] * len(batch))
        ]
        target = measure({"target": target_decode}, prompts, bench.repeats, bench.batch_size, meter)
    finally:
        engine.close()
    settings = speculative_settings([head.threshold, *bench.thresholds])
    by_window: dict[int, Measured] = {}
    for window in bench.windows:
        llm = speculative_llm(
            params.pair.target,
            params.pair.draft,
            window,
            {"rule": "judge", "judge_head": str(head_path)},
            {"tensor_parallel_size": vllm.tensor_parallel_size, **vllm.engine_kwargs},
            params.pair.dtype,
            vllm.max_model_len,
        )
        try:
            chosen = settings + ([OVERHEAD_SETTING] if window == bench.overhead_window else [])
            decoders = {s.name: _speculative_decoder(decode, llm, max_new, eos, s.override) for s in chosen}
            by_window[window] = measure(decoders, prompts, bench.repeats, bench.batch_size, meter)
        finally:
            llm.llm_engine.engine_core.shutdown()
    report = header(bench, len(examples))
    report.update(
        build_report(
            task,
            examples,
            tokenizer,
            target,
            by_window,
            head.threshold,
            bench.overhead_window,
            bench.min_ratio,
        )
    )
    report["pair"], report["task"] = params.pair.name, params.task.name
    report["head"] = {"path": str(head_path), "threshold": head.threshold, "features": head.features.source}
    report["runtime_seconds"] = round(time.perf_counter() - started, 1)
    report["cpus"], report["load_average_1m"] = os.cpu_count(), [load_before, os.getloadavg()[0]]
    report["engine_starts"] = 1 + len(bench.windows)
    return report


def _speculative_decoder(
    decode: Callable[..., Any], llm: Any, max_new: int, eos: set[int], override: dict[str, Any] | None
) -> DecodeFn:
    return lambda batch: [
        (r.tokens, r.target_passes) for r in decode(llm, batch, max_new, eos, override=override)
    ]


def card_section(report: dict[str, Any]) -> dict[str, Any]:
    """What the head's card shows of the benchmark: headline, judge overhead, speed and energy tables."""
    keys = ("date", "machine", "problems", "windows", "repeats", "batch_size", "headline", "judge_overhead")
    return {
        **{key: report[key] for key in keys},
        "speed": speed_table(report),
        "energy": energy_table(report),
    }


def section_markdown(section: dict[str, Any]) -> list[str]:
    """Speed table, energy table, judge overhead and (when short of the ratio) the explanation."""
    headline, overhead = section["headline"], section["judge_overhead"]
    lines = [
        f"{section['date']}, {section['machine']}, {section['problems']} problems, windows {section['windows']} "
        f"(tuned per setting), {section['repeats']} repeats after a warm-up (medians).",
        "",
        f"AutoJudge at the registered threshold {headline['registered_threshold']} "
        f"(W={headline['autojudge_window']}) vs SD exact (W={headline['sd_window']}): "
        f"**{headline['tokens_per_s_ratio_vs_sd']:.2f}x tokens/s** at batch size 1 "
        f"({headline['batched_tokens_per_s_ratio_vs_sd']:.2f}x batched; MAT {headline['mat_ratio_vs_sd']:.2f}x), "
        "accuracy drop "
        f"**{headline['accuracy_drop_vs_sd_points']:+.1f} points**. Judge overhead: "
        f"**{overhead['percent']:+.1f}%** of step time (judge at threshold 0 vs exact, W={overhead['window']}).",
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
    from autojudge.io import write_json, write_text
    from autojudge.report import write_csv

    write_json(metrics, report)
    rows = curve_rows(report)
    write_csv(curve.with_suffix(".csv"), rows)
    plot_tokens_per_s(curve.with_suffix(".png"), rows, f"vLLM, {report['problems']} problems")
    write_text(markdown_path, report_markdown(report))
