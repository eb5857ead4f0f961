"""The vLLM benchmark's figures: the paired bootstrap, the step-cost fit, windows chosen on tuning runs,
intervals, the named winner and why a short ratio falls short."""

from __future__ import annotations

import numpy as np
import pytest

from autojudge.bench.vllm_analysis import control_figures, step_cost_fit
from autojudge.evaluation.stats import mean_difference, paired_bootstrap, rate_ratio, verdict

# --- the bootstrap ---------------------------------------------------------------------------------


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


# --- the step-cost fit -----------------------------------------------------------------------------


def test_step_cost_fit_recovers_a_line() -> None:
    assert step_cost_fit({4: 3.0 + 0.5 * 4, 8: 3.0 + 0.5 * 8, 16: 3.0 + 0.5 * 16}) == {
        "fixed_ms": 3.0,
        "per_draft_token_ms": 0.5,
    }
    assert step_cost_fit({8: 4.0}) is None


def test_step_cost_is_fitted_on_timed_windows_else_on_the_tuning_passes(fake_report, target_seconds) -> None:
    """Each lossless setting timed at both windows: the fit of its timed passes; timed at one window only (as
    after window tuning): the fit of its tuning passes; neither: None, and why. One draft token's cost is
    put against a step of the target alone."""
    target_step_ms = 1000 * sum(target_seconds) / 16  # the fakes' target alone: 4 passes per problem
    timed = fake_report()["step_cost"]
    assert timed["sd_stock"]["source"] == "timed passes" and timed["sd_stock"]["windows"] == [1, 8]
    per_token = timed["sd_stock"]["per_draft_token_ms"]  # 0.5 -> 0.6 of the target's seconds, 2 passes each
    assert per_token == pytest.approx(1000 * 0.1 * sum(target_seconds) / 8 / 7, abs=1e-3)
    assert timed["sd_stock"]["draft_token_vs_target_step"] == round(per_token / target_step_ms, 3)
    assert timed["proposer"] == "draft_model" and timed["reason"] is None
    untuned = fake_report(tuned=True)["step_cost"]
    assert untuned["sd_stock"] is None and "one window" in untuned["reason"]
    tuned = fake_report(tuned=True, tuning_step_ms={"sd_stock": {1: 50.0, 8: 120.0}, "sd_exact": {1: 50.0}})
    fit = tuned["step_cost"]["sd_stock"]
    assert fit["source"] == "tuning passes" and fit["fixed_ms"] == 40.0 and fit["per_draft_token_ms"] == 10.0
    assert fit["draft_token_vs_target_step"] == round(10.0 / target_step_ms, 3)
    assert tuned["step_cost"]["sd_exact"] is None


# --- the report: windows chosen on tuning runs, intervals, the short ratio explained ---------------


def test_windows_are_chosen_on_tuning_runs_and_reported_from_timed_runs(fake_report, target_seconds) -> None:
    report = fake_report()
    head = report["settings"]["autojudge_t0.5"]
    assert head["windows"] == {"1": 1, "8": 1}
    timed_w1 = report["by_window"]["autojudge_t0.5"]["1"]["by_batch"]["1"]
    assert head["by_batch"]["1"] == timed_w1
    assert timed_w1["tokens_per_s"] == round(
        16 / (0.4 * sum(target_seconds)), 2
    )  # the timed run at W=1, not W=8's
    assert timed_w1["tuning_tokens_per_s"] == round(16 / (0.3 * sum(target_seconds)), 2)
    assert head["by_batch"]["1"]["seconds_per_problem"] == round(0.4 * sum(target_seconds) / 4, 5)
    assert report["settings"]["sd_stock"]["windows"] == {"1": 1, "8": 1}
    assert list(report["settings"]) == ["sd_stock", "sd_exact", "autojudge_t0.5"]


def test_report_gives_intervals_and_names_winners_only_when_they_say_so(fake_report) -> None:
    report = fake_report()
    headline = report["headline"]
    # per-problem seconds 0.4 * target_seconds against 0.5 * target_seconds: exactly 1.25x on every resample
    assert headline["tokens_per_s_ratio_vs_stock"] == {
        "point": 1.25,
        "low": 1.25,
        "high": 1.25,
        "verdict": "faster",
    }
    assert headline["exact_vs_stock"]["verdict"] == "not distinguishable"
    assert headline["mat_ratio_vs_stock"]["point"] == 2.0
    assert headline["fastest_bs1"]["setting"] == "autojudge_t0.5"
    # accuracy beside it: the comparison's test decode of the same setting (one of 8 problems wrong)
    accuracy = headline["accuracy"]
    assert accuracy["compare_setting"] == "judge t=0.5 W=8" and accuracy["problems"] == 8
    drop = accuracy["drop_vs_target_points"]
    assert drop["point"] == 12.5 and drop["low"] == 0.0 and drop["verdict"] == "not distinguishable"
    assert report["settings"]["sd_stock"]["compared_accuracy"]["compare_setting"] == "exact SD W=8"
    assert report["target"]["compared_accuracy"]["accuracy"] == 1.0
    assert report["sd_stock_equals_target"] == {"1": True, "8": True}
    assert report["sd_exact_equals_target"] == {"1": True, "8": True}
    decoded = report["settings"]["autojudge_t0.5"]["accuracy"]  # the benchmark's own check decode
    assert (
        decoded["accuracy"] == 0.75 and decoded["window"] == 1 and decoded["same_tokens_as_target"] is False
    )
    overhead = report["judge_overhead"]
    assert overhead["percent"] == 5.0 and overhead["percent_interval"]["verdict"] == "slower"
    assert overhead["same_tokens_as_exact"] and headline["judge_overhead_percent"] == 5.0
    assert report["settings"]["sd_stock"]["runner"]["plugin"] == "not loaded"
    assert headline["why_below_min_ratio"] is None  # 1.25 >= 1.1
    assert report["settings"]["sd_exact"]["speedup_vs_exact_bs1"]["point"] == 1.0
    assert (
        headline["tokens_per_s_ratio_vs_control"]
        == report["settings"]["autojudge_t0.5"]["speedup_vs_exact_bs1"]
    )
    # the control, plugin exact SD, runs at stock SD's speed: (a) contains 1.00, no bias
    control = report["control"]
    assert control["setting"] == "sd_exact" and control["rule"] == {"rule": "exact"}
    assert control["vs_stock_bs1"]["point"] == 1.0 and control["biased"] is False


def test_a_control_off_1_is_marked_biased() -> None:
    def settings(low: float, high: float) -> dict:
        ratio = {"point": (low + high) / 2, "low": low, "high": high, "verdict": "-"}
        return {"sd_exact": {"speedup_vs_stock_bs1": ratio, "windows": {"1": 4}}}

    assert control_figures(settings(1.02, 1.09))["biased"] is True
    assert control_figures(settings(0.9, 0.98))["biased"] is True
    assert control_figures(settings(0.97, 1.04))["biased"] is False


def test_a_short_ratio_is_explained_from_step_times(fake_report) -> None:
    why = fake_report(min_ratio=1.5)["headline"]["why_below_min_ratio"]
    assert "tokens/s gain only 1.25 [1.25, 1.25]x" in why and "(MAT) 2.00 [2.00, 2.00]x over stock SD" in why
    assert "Stock SD's step time over the windows (timed passes) fits" in why
