"""The vLLM tokens/s benchmark: measurement, window choice, intervals and tables, and the pipeline's real run (slow)."""

from __future__ import annotations

import json
import shutil
import statistics

import numpy as np
import pytest
import torch
from pipeline_run import PIPELINE_PARAMS

from autojudge.bench.energy import EnergyReading
from autojudge.bench.vllm_bench import (
    Measured,
    Run,
    build_report,
    check_plan,
    measure,
    speculative_settings,
    step_cost_fit,
    summarize_runs,
)
from autojudge.errors import InputError
from autojudge.evaluation.stats import mean_difference, paired_bootstrap, rate_ratio, verdict
from autojudge.params import BenchParams

NO_ENERGY = EnergyReading.unavailable("none")
V1 = {"runner": "V1 (vllm.v1.worker.gpu_model_runner)", "worker_cls": "vllm.v1.worker.cpu_worker.CPUWorker"}


class CountingTask:
    """Scores a response as correct when it says 'yes'."""

    def score(self, response: str, example: str) -> bool:
        return response == "yes"


class WordTokenizer:
    def decode(self, tokens: list[int], skip_special_tokens: bool = True) -> str:
        return "yes" if tokens and tokens[0] == 1 else "no"


class NoMeter:
    """The meter's interface without a GPU: not available, with a reason."""

    reading = EnergyReading.unavailable("no GPU in this test")

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None: ...


# --- the bootstrap ------------------------------------------------------------------------------


def test_paired_bootstrap_is_seeded_and_contains_its_point() -> None:
    generator = np.random.default_rng(7)
    seconds = generator.uniform(0.5, 2.0, 40)
    tokens = generator.integers(50, 100, 40)
    a = np.column_stack([tokens, seconds * 0.8 * generator.uniform(0.9, 1.1, 40)])
    b = np.column_stack([tokens, seconds])
    first = paired_bootstrap(a, b, rate_ratio, 500, seed=3)
    assert first == paired_bootstrap(a, b, rate_ratio, 500, seed=3)  # deterministic
    assert first != paired_bootstrap(a, b, rate_ratio, 500, seed=4)
    point, low, high = first
    assert point == pytest.approx(rate_ratio(a, b)) and low < point < high
    assert low > 1.15 and high < 1.4  # a is about 1.25x as fast, and the interval says so
    assert verdict(low, high, 1.0, "faster", "slower") == "faster"


def test_paired_bootstrap_is_degenerate_when_every_pair_is_equal() -> None:
    rows = [[80, 1.0], [60, 2.0], [90, 0.5]]
    assert paired_bootstrap(rows, rows, rate_ratio, 200, 0) == (1.0, 1.0, 1.0)
    assert paired_bootstrap([1, 0, 1], [1, 0, 1], mean_difference, 200, 0) == (0.0, 0.0, 0.0)
    assert verdict(1.0, 1.0, 1.0, "faster", "slower") == "not distinguishable"
    with pytest.raises(ValueError, match="same problems"):
        paired_bootstrap([1, 2], [1], mean_difference)


# --- measurement and summaries --------------------------------------------------------------


def test_measure_warms_up_then_interleaves_tuning_and_timed_rounds() -> None:
    calls: list[tuple[str, int]] = []

    def decoder(name: str):
        def decode(batch):
            calls.append((name, len(batch)))
            return [([7] * 3, 2) for _ in batch]

        return decode

    measured = measure(
        {"a": decoder("a"), "b": decoder("b")}, [[1], [2], [3]], [[4]] * 4, [1, 2], 1, 1, NoMeter
    )
    warm_up = [("a", 2), ("a", 1), ("b", 2), ("b", 1)]
    one_round = [("a", 1)] * 3 + [("a", 2), ("a", 1)] + [("b", 1)] * 3 + [("b", 2), ("b", 1)]
    accuracy = [("a", 2), ("a", 2), ("b", 2), ("b", 2)]  # untimed, at the largest batch size
    assert calls == warm_up + one_round + one_round + accuracy
    bs1, bs2 = measured.runs["a"][1], measured.runs["a"][2]
    assert [run.tuning for run in bs1] == [True, False] and [run.tuning for run in bs2] == [True, False]
    assert len(bs1[0].problem_seconds) == 3 and bs2[0].problem_seconds is None
    assert bs2[0].tokens == 9 and bs2[0].target_passes == 6 and bs2[0].passes == [2, 2, 2]
    assert bs2[0].energy.reason == "no GPU in this test"
    assert measured.accuracy["b"] == [[7] * 3] * 4


def _run(
    seconds: float, outputs: list[list[int]], passes: list[int], tuning: bool = False, size: int = 2
) -> Run:
    per_problem = [seconds / len(outputs)] * len(outputs) if size == 1 else None
    return Run(size, tuning, seconds, outputs, passes, NO_ENERGY, per_problem)


def test_summary_reports_timed_medians_and_seconds_per_problem() -> None:
    outputs = [[1, 5, 5], [0, 5]]
    runs = [_run(0.5, outputs, [2, 2], tuning=True), _run(2.0, outputs, [2, 2]), _run(1.0, outputs, [2, 2])]
    runs.append(_run(4.0, outputs, [2, 2]))
    summary = summarize_runs(runs)
    assert summary["median_seconds"] == 2.0 and summary["seconds_per_problem"] == 1.0  # 2 s / 2 problems
    assert summary["tokens_per_s"] == statistics.median([5 / 2.0, 5 / 1.0, 5 / 4.0])  # tuning run left out
    assert summary["tuning_tokens_per_s"] == 10.0 and summary["seconds_per_repeat"] == [2.0, 1.0, 4.0]
    assert summary["mat"] == 5 / 4 and summary["step_ms"] is None  # batched: no per-request step
    assert summarize_runs([_run(1.0, outputs, [2, 2], size=1)])["step_ms"] == 250.0
    assert summary["same_tokens_every_repeat"] is True and summary["energy"] == {
        "available": False,
        "reason": "none",
    }
    assert summarize_runs([*runs, _run(1.0, [[0], [0]], [1, 1])])["same_tokens_every_repeat"] is False


def test_energy_summary_is_median_joules_per_1k_tokens() -> None:
    readings = [
        EnergyReading(True, "nvidia-smi", None, ["T4"], joules, joules / 2, 2.0, 20)
        for joules in (30, 10, 20)
    ]
    runs = [Run(1, False, 2.0, [[1] * 500], [100], reading, [2.0]) for reading in readings]
    energy = summarize_runs(runs)["energy"]
    assert energy["joules"] == 20 and energy["joules_per_1k_tokens"] == 40 and energy["gpus"] == ["T4"]


def test_step_cost_fit_recovers_a_line() -> None:
    assert step_cost_fit({4: 3.0 + 0.5 * 4, 8: 3.0 + 0.5 * 8, 16: 3.0 + 0.5 * 16}) == {
        "fixed_ms": 3.0,
        "per_draft_token_ms": 0.5,
    }
    assert step_cost_fit({8: 4.0}) is None


def test_settings_and_plan_checks() -> None:
    names = [s.name for s in speculative_settings([0.5, 0.8814336657, 0.5])]
    assert names == ["sd_exact", "autojudge_t0.5", "autojudge_t0.8814"]
    bench = BenchParams()
    check_plan(bench, 6)
    with pytest.raises(InputError, match=r"bench\.overhead_window 32 must be one of bench\.windows \[1, 8\]"):
        check_plan(bench.model_copy(update={"overhead_window": 32}))
    with pytest.raises(InputError, match=r"bench\.batch_sizes must be distinct positive sizes including 1"):
        check_plan(bench.model_copy(update={"batch_sizes": [8, 32]}))
    with pytest.raises(InputError, match=r"bench\.tuning_repeats must be >= 1, got 0"):
        check_plan(bench.model_copy(update={"tuning_repeats": 0}))
    with pytest.raises(
        InputError, match=r"bench\.accuracy_problems 64 need 64 problems, but split 'test' has 24"
    ):
        check_plan(bench.model_copy(update={"accuracy_problems": 64}), 24)


# --- the report: windows chosen on tuning runs, intervals, tables ---------------------------------

RIGHT, WRONG = [1, 5, 5, 5], [0, 5, 5, 5]
BASE = [1.0, 2.0, 1.5, 0.5]  # seconds per problem of the target alone at batch size 1


def _runs(size: int, tuning: float, timed: float, outputs: list[list[int]], passes: int) -> list[Run]:
    """A tuning and a timed run at one batch size, problem seconds ``factor * BASE``."""

    def run(factor: float, is_tuning: bool) -> Run:
        per_problem = [factor * s for s in BASE]
        seconds = sum(per_problem) / size
        return Run(
            size,
            is_tuning,
            seconds,
            outputs,
            [passes] * len(outputs),
            NO_ENERGY,
            per_problem if size == 1 else None,
        )

    return [run(tuning, True), run(timed, False)]


def _measured(spec: dict[str, tuple[float, float, int]], accuracy: dict[str, list[list[int]]] | None = None):
    """setting -> (tuning factor, timed factor, target passes per problem); every problem answered right."""
    outputs = [RIGHT] * len(BASE)
    return Measured(
        {
            name: {size: _runs(size, tuning, timed, outputs, passes) for size in (1, 8)}
            for name, (tuning, timed, passes) in spec.items()
        },
        {name: (accuracy or {}).get(name, [RIGHT] * 4) for name in spec},
        {name: {**V1, "plugin": "not loaded" if name == "sd_stock" else "loaded, enabled"} for name in spec},
    )


def _report(min_ratio: float = 1.1, overhead_window: int = 8):
    target = _measured({"target": (1.0, 1.0, 4)})
    target.runners["target"]["plugin"] = "not loaded"
    one_wrong = {"autojudge_t0.5": [RIGHT, RIGHT, RIGHT, WRONG]}
    by_window = {
        # autojudge: its tuning runs favour W=1 (0.3 < 0.35), its timed runs would favour W=8 (0.2 < 0.4)
        1: _measured(
            {"sd_exact": (0.5, 0.5, 2), "autojudge_t0.5": (0.3, 0.4, 1), "sd_stock": (0.5, 0.5, 2)}, one_wrong
        ),
        8: _measured(
            {
                "sd_exact": (0.6, 0.6, 2),
                "autojudge_t0.5": (0.35, 0.2, 1),
                "judge_t0": (0.63, 0.63, 2),
                "sd_stock": (0.6, 0.6, 2),
            },
            one_wrong,
        ),
    }
    bench = BenchParams(
        windows=[1, 8],
        overhead_window=overhead_window,
        batch_sizes=[1, 8],
        bootstrap_samples=200,
        min_ratio=min_ratio,
    )
    return build_report(CountingTask(), WordTokenizer(), ["q"] * 4, target, by_window, 0.5, bench)


def test_windows_are_chosen_on_tuning_runs_and_reported_from_timed_runs() -> None:
    report = _report()
    head = report["settings"]["autojudge_t0.5"]
    assert head["windows"] == {"1": 1, "8": 1}
    timed_w1 = report["by_window"]["autojudge_t0.5"]["1"]["by_batch"]["1"]
    assert head["by_batch"]["1"] == timed_w1
    assert timed_w1["tokens_per_s"] == round(16 / (0.4 * sum(BASE)), 2)  # the timed run at W=1, not W=8's
    assert timed_w1["tuning_tokens_per_s"] == round(16 / (0.3 * sum(BASE)), 2)
    assert head["by_batch"]["1"]["seconds_per_problem"] == round(0.4 * sum(BASE) / 4, 5)
    assert report["settings"]["sd_stock"]["windows"] == {"1": 1, "8": 1}
    assert list(report["settings"]) == ["sd_stock", "sd_exact", "autojudge_t0.5"]


def test_report_gives_intervals_and_names_winners_only_when_they_say_so() -> None:
    report = _report()
    headline = report["headline"]
    # per-problem seconds 0.4 * BASE against 0.5 * BASE: exactly 1.25x on every resample
    assert headline["tokens_per_s_ratio_vs_stock"] == {
        "point": 1.25,
        "low": 1.25,
        "high": 1.25,
        "verdict": "faster",
    }
    assert headline["exact_vs_stock"]["verdict"] == "not distinguishable"
    assert headline["mat_ratio_vs_stock"]["point"] == 2.0
    assert headline["fastest_bs1"]["setting"] == "autojudge_t0.5"
    drop = headline["accuracy_drop_vs_target_points"]  # one problem of 4 wrong: 25 points, but 4 problems
    assert drop["point"] == 25.0 and drop["low"] == 0.0 and drop["verdict"] == "not distinguishable"
    assert report["sd_stock_equals_target"] == {"1": True, "8": True}
    assert report["sd_exact_equals_target"] == {"1": True, "8": True}
    accuracy = report["settings"]["autojudge_t0.5"]["accuracy"]
    assert (
        accuracy["accuracy"] == 0.75
        and accuracy["window"] == 1
        and accuracy["same_tokens_as_target"] is False
    )
    overhead = report["judge_overhead"]
    assert overhead["percent"] == 5.0 and overhead["percent_interval"]["verdict"] == "slower"
    assert overhead["same_tokens_as_exact"] and headline["judge_overhead_percent"] == 5.0
    assert report["settings"]["sd_stock"]["runner"]["plugin"] == "not loaded"
    assert headline["why_below_min_ratio"] is None  # 1.25 >= 1.1


def test_a_short_ratio_is_explained_from_step_times() -> None:
    why = _report(min_ratio=1.5)["headline"]["why_below_min_ratio"]
    assert "tokens/s gain only 1.25 [1.25, 1.25]x" in why and "(MAT) 2.00 [2.00, 2.00]x over stock SD" in why
    assert "Stock SD's step time over the windows fits" in why


def test_speed_table_has_one_row_per_setting_with_batch_sizes_and_runner() -> None:
    from autojudge.bench.vllm_bench import header, speed_table

    report = {**header(BenchParams(batch_sizes=[1, 8]), 4, 4), **_report()}
    rows = speed_table(report)
    assert [r["setting"] for r in rows] == [
        "target alone",
        "SD stock (vLLM)",
        "SD exact (plugin)",
        "AutoJudge",
    ]
    head = rows[3]
    assert head["threshold"] == 0.5 and head["window (bs 1/8)"] == "1/1"
    assert head["speedup over stock SD, bs 1 [95% CI]"] == "1.250 [1.250, 1.250]"
    assert head["accuracy, % [95% CI]"].startswith("75.0 [") and head[
        "drop vs target, points [95% CI]"
    ].startswith("+25.0")
    assert {"tokens/s bs 1", "s/problem bs 1", "tokens/s bs 8", "s/problem bs 8"} <= set(head)
    assert rows[1]["runner"] == "V1, CPUWorker, plugin not loaded"


def test_card_shows_speed_and_energy_tables_even_without_gpu(params) -> None:
    from autojudge.bench.vllm_bench import header
    from autojudge.features.hidden_states import FeatureSpec
    from autojudge.heads.artifact import JudgeHead
    from autojudge.registry.card import build_card, card_markdown

    bench = json.loads(
        json.dumps({**header(params.bench, 4, 4), **_report(min_ratio=1.3)})
    )  # as register reads it
    head = JudgeHead(torch.zeros(4), 0.0, 0.5, FeatureSpec("target", 4, 2), "toy", "arith", "hash")
    row = {"setting": "exact W=8", "method": "exact", "accuracy": 1.0, "mat": 2.0, "accepted_mismatches": 0}
    evaluation = {
        "split": "test",
        "settings": [row],
        "headline": {
            "judge_mat": 2.0,
            "exact_sd_mat": 2.0,
            "mat_gain_vs_exact_sd": 1.0,
            "judge_accuracy": 1.0,
            "target_accuracy": 1.0,
            "accuracy_drop_vs_target": 0.0,
        },
    }
    card = build_card(params, head, {}, evaluation, "autojudge-arith-toy", bench=bench)
    text = card_markdown(card)
    assert card["vllm_bench"]["speed"][1]["setting"] == "SD stock (vLLM)"
    assert "## Speed and energy with vLLM" in text and "| AutoJudge | 0.5 | 1/1 |" in text
    assert (
        "**1.25 [1.25, 1.25]x (faster) tokens/s**" in text
        and "Fastest at batch size 1: **AutoJudge at threshold 0.5**" in text
    )
    energy = card["vllm_bench"]["energy"][0]
    assert (
        energy["joules"] == "not available" and energy["GPU or reason"] == "none"
    )  # the reason, in the table
    assert "### Why the ratio is below 1.3" in text  # 1.25x: explained from step times


# --- the real run: the pipeline's bench stage ----------------------------------------------------


@pytest.fixture(scope="module")
def pipeline_bench(deployed_pipeline):
    """The bench stage of the suite's one pipeline run (tests/pipeline_run.py: 2 timed and 2 accuracy
    problems, windows 2 and 8, batch sizes 1 and 2, one tuning and one timed repeat, thresholds: the
    head's own and 1.0, which accepts every mismatch): its report and its checkout."""
    workdir = deployed_pipeline.workdir
    return json.loads((workdir / "metrics" / "bench.json").read_text()), workdir


@pytest.mark.slow
def test_real_benchmark_is_consistent(pipeline_bench) -> None:
    report, _ = pipeline_bench
    windows = PIPELINE_PARAMS["bench.windows"]
    assert report["engine_starts"] == 1 + 2 * len(
        windows
    )  # the target, and a plugin and a stock engine per window
    assert report["problems"] == PIPELINE_PARAMS["bench.problems"]
    assert report["accuracy_problems"] == PIPELINE_PARAMS["bench.accuracy_problems"]
    # lossless SD, stock and through the plugin, emits the target's tokens
    assert all(report["sd_stock_equals_target"].values()) and all(report["sd_exact_equals_target"].values())
    settings = report["settings"]
    assert list(settings)[:2] == ["sd_stock", "sd_exact"] and "autojudge_t1" in settings
    assert report["headline"]["autojudge_setting"] in settings
    assert settings["sd_stock"]["accuracy"]["same_tokens_as_target"]
    assert settings["sd_exact"]["accuracy"]["same_tokens_as_target"]
    runners = [report["target"]["runner"], *(figures["runner"] for figures in settings.values())]
    assert all(runner["runner"].startswith("V1") for runner in runners)
    assert report["target"]["runner"]["plugin"] == settings["sd_stock"]["runner"]["plugin"] == "not loaded"
    assert settings["sd_stock"]["runner"]["worker_cls"] != settings["sd_exact"]["runner"]["worker_cls"]
    assert settings["sd_exact"]["runner"]["plugin"] == "loaded, enabled"
    problems = PIPELINE_PARAMS["bench.problems"]
    for figures in settings.values():
        assert set(figures["windows"]) == {"1", "2"} and set(figures["windows"].values()) <= set(windows)
        for size in ("1", "2"):
            summary = figures["by_batch"][size]
            assert len(summary["seconds_per_repeat"]) == 1 and len(summary["tuning_seconds_per_repeat"]) == 1
            assert summary["seconds_per_problem"] == pytest.approx(
                summary["median_seconds"] / problems, abs=1e-4
            )
        ratio = figures["speedup_vs_stock_bs1"]
        assert ratio["low"] <= ratio["point"] <= ratio["high"]
        assert 0 <= figures["accuracy"]["accuracy"] <= 1
    stock, loose = (report["by_window"][name]["2"] for name in ("sd_stock", "autojudge_t1"))
    assert (
        3.0 >= loose["by_batch"]["1"]["mat"] > stock["by_batch"]["1"]["mat"]
    )  # (nearly) every mismatch accepted
    overhead = report["judge_overhead"]  # the judge at threshold 0 accepts nothing: exact SD's tokens
    assert overhead["same_tokens_as_exact"] and overhead["window"] == PIPELINE_PARAMS["bench.overhead_window"]
    assert overhead["percent_interval"]["low"] <= overhead["percent"] <= overhead["percent_interval"]["high"]
    assert report["step_cost"]["sd_stock"] is not None


@pytest.mark.slow
def test_real_benchmark_writes_metrics_plot_and_tables(pipeline_bench) -> None:
    report, workdir = pipeline_bench
    plots = workdir / "plots"
    assert (plots / "bench_tokens_per_s.png").stat().st_size > 5_000
    # every setting at every window, and the judge at threshold 0 at the overhead window
    rows = len(report["settings"]) * len(PIPELINE_PARAMS["bench.windows"]) + 1
    assert len((plots / "bench_tokens_per_s.csv").read_text().splitlines()) == 1 + rows
    text = (plots / "bench.md").read_text()
    assert "### Speed (vLLM)" in text and "### Energy" in text and "plugin not loaded" in text
    if shutil.which("nvidia-smi") is None:
        assert "not available" in text
