"""Each setting's window chosen on tuning passes with every engine alive together: which engines each phase
starts, the choice, and the report's table (fake measurements; the real engines: the benchmark's runs)."""

from __future__ import annotations

from dataclasses import replace

from autojudge.bench.energy import EnergyReading
from autojudge.bench.vllm_measure import Measured, Run
from autojudge.bench.vllm_plan import header, timed_windows, tuning_windows
from autojudge.bench.vllm_report import report_markdown
from autojudge.bench.vllm_settings import EXACT, OVERHEAD, STOCK, TARGET
from autojudge.bench.window_tuning import tune_windows
from autojudge.params import BenchParams

JUDGE, FLY = "autojudge_t0.5", "recommended_1pt"
WINDOWS = {TARGET: [0], STOCK: [4, 8], EXACT: [4, 8], JUDGE: [4, 8], FLY: [8], OVERHEAD: [8]}
SECONDS = {
    (STOCK, 4): 2.0,
    (STOCK, 8): 2.5,
    (EXACT, 4): 2.0,
    (EXACT, 8): 2.0,
    (JUDGE, 4): 2.0,
    (JUDGE, 8): 1.0,
}


def _tuning_run(seconds: float) -> Run:
    return Run(1, True, seconds, [[1] * 10], [4], EnergyReading.unavailable("none"), [seconds])


def test_each_window_tunes_its_settings_and_the_timed_phase_runs_each_at_its_fastest(
    plan_of, monkeypatch
) -> None:
    phases: list[tuple[int, dict]] = []

    def measure_phase(phase, models) -> tuple[dict, list]:
        (group,) = phase.groups
        (window,) = {engine.window for engine in group.engines}
        settings = {name: [window] for engine in group.engines for name in engine.settings}
        phases.append((window, settings))
        runs = {name: {1: [_tuning_run(SECONDS.get((name, window), 3.0))] * 3} for name in settings}
        return {window: Measured(runs)}, []

    monkeypatch.setattr("autojudge.bench.window_tuning.measure_phase", measure_phase)
    bench = BenchParams(
        windows=[4, 8], overhead_window=8, engines_together=True, problems=20, tuning_repeats=3
    )
    plan = plan_of(bench)
    fly = {"rule": "fly", "threshold": 0.3}
    plan = replace(plan, windows_of=WINDOWS, on_plugin={**plan.on_plugin, FLY: fly}, tuning_prompts=[[1]] * 4)
    tuning = tune_windows(plan)
    # one phase per window, with the settings that run at it: neither the target nor the overhead setting
    assert phases == [
        (4, {STOCK: [4], EXACT: [4], JUDGE: [4]}),
        (8, {STOCK: [8], EXACT: [8], JUDGE: [8], FLY: [8]}),
    ]
    assert tuning.tokens_per_s[JUDGE] == {4: 5.0, 8: 10.0}
    assert tuning.step_ms[JUDGE] == {4: 500.0, 8: 250.0}  # 4 target passes per tuning pass
    # stock SD is faster at 4; exact SD ties and takes the smaller window; the judge is faster at 8
    chosen = tuning.chosen()
    assert chosen == {STOCK: 4, EXACT: 4, JUDGE: 8, FLY: 8}
    # the overhead setting is compared step for step with exact SD, so it follows exact SD's window
    assert timed_windows(chosen) == {TARGET: [0], STOCK: [4], EXACT: [4], JUDGE: [8], FLY: [8], OVERHEAD: [4]}
    report = tuning.report()
    assert report["chosen"] == chosen and report["problems"] == 4 and report["batch_size"] == 1
    assert report["first_problem"] == 20 and report["step_ms"][STOCK] == {"4": 500.0, "8": 625.0}
    assert set(report["load_average_1m"]) == {"4", "8"} and set(report["rounds"]) == {"4", "8"}


def test_a_single_window_grid_has_one_tuning_phase() -> None:
    assert [w for w, _ in tuning_windows({TARGET: [0], STOCK: [8], EXACT: [8], OVERHEAD: [8]})] == [8]


def test_the_report_says_how_windows_were_chosen_and_tabulates_the_tuning(fake_report) -> None:
    report = {**header(BenchParams(windows=[1, 8], batch_sizes=[1, 8]), 4, 4), **fake_report(tuned=True)}
    # each setting timed at its own window: stock SD at 1, the plugin engine's settings at 8
    assert report["sd_stock_equals_target"] == {"1": True} and report["sd_exact_equals_target"] == {"8": True}
    assert report["headline"]["stock_window"] == 1 and report["headline"]["autojudge_window"] == 8
    report |= {"pair": "toy", "task": "arith", "engines_together": True}
    report["window_tuning"] = {
        "problems": 4,
        "first_problem": 6,
        "batch_size": 1,
        "repeats": 1,
        "tokens_per_s": {STOCK: {"1": 20.0, "8": 25.0}, JUDGE: {"1": 30.0, "8": 28.0}},
        "chosen": {STOCK: 8, JUDGE: 1},
        "load_average_1m": {"1": [1.0, 1.5], "8": [1.5, 2.0]},
    }
    text = report_markdown(report)
    assert (
        "the window (of [1, 8]) is the fastest at batch size 1 on 1 tuning pass(es) of problems 7-10 of the "
        "split (not timed)" in text
    )
    assert "### Window tuning (tokens/s, batch size 1, problems 7-10 of the split; * chosen)" in text
    assert (
        "| SD stock (vLLM) | 20.0 | 25.0 * |" in text
        and "| AutoJudge at threshold 0.5 | 30.0 * | 28.0 |" in text
    )
    assert "during each window's tuning: W=1 1.0 -> 1.5, W=8 1.5 -> 2.0." in text
