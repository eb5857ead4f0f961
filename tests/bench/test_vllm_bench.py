"""The vLLM tokens/s benchmark: the real run of the pipeline's bench stage (slow), and how its engines share
the machine (fakes)."""

from __future__ import annotations

import json
import os
import shutil
from types import SimpleNamespace

import pytest
from pipeline_run import PIPELINE_PARAMS

from autojudge.bench.vllm_engines import PLUGIN_ENABLED, PLUGIN_NOT_LOADED, measure_phase, thread_record
from autojudge.bench.vllm_measure import Measured, RoundRecord
from autojudge.bench.vllm_plan import EngineSpec, Group, Phase


@pytest.fixture(scope="module")
def pipeline_bench(deployed_pipeline):
    """The bench stage of the suite's one pipeline run (tests/pipeline_run.py: 2 timed and 2 accuracy
    problems, window 8, batch sizes 1 and 2, one timed repeat and no tuning pass (one window), thresholds: the
    head's own and 1.0, which accepts every mismatch): its report and its checkout."""
    workdir = deployed_pipeline.workdir
    return json.loads((workdir / "metrics" / "bench.json").read_text()), workdir


@pytest.mark.slow
def test_real_benchmark_is_consistent(pipeline_bench) -> None:
    report, workdir = pipeline_bench
    windows = PIPELINE_PARAMS["bench.windows"]
    # the comparison's recommendations (a rule at its chosen point, not exact SD) are timed as served
    comparison = json.loads((workdir / "metrics" / "arith" / "compare.json").read_text())
    served = {entry["setting"] for entry in comparison["serving"].values() if entry["autojudge"]}
    timed = report["recommendations"]
    assert {info["compare_setting"] for info in timed.values()} == served
    own_engines = sum(info["own_engine"] for info in timed.values())
    # the target, a plugin and a stock engine per window, and one per recommendation that needs its own
    assert report["engine_starts"] == 1 + (2 + own_engines) * len(windows)
    assert report["problems"] == PIPELINE_PARAMS["bench.problems"]
    assert report["tuning_repeats"] == 0  # one window: nothing to choose, no tuning pass
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
            assert len(summary["seconds_per_repeat"]) == 1 and summary["tuning_seconds_per_repeat"] == []
            assert summary["seconds_per_problem"] == pytest.approx(
                summary["median_seconds"] / problems, abs=1e-4
            )
        ratio = figures["speedup_vs_stock_bs1"]
        assert ratio["low"] <= ratio["point"] <= ratio["high"]
        assert 0 <= figures["accuracy"]["accuracy"] <= 1
    stock, loose = (report["by_window"][name]["8"] for name in ("sd_stock", "autojudge_t1"))
    assert 9.0 >= loose["by_batch"]["1"]["mat"] > stock["by_batch"]["1"]["mat"]  # every mismatch accepted
    overhead = report["judge_overhead"]  # the judge at threshold 0 accepts nothing: exact SD's tokens
    assert overhead["same_tokens_as_exact"] and overhead["window"] == PIPELINE_PARAMS["bench.overhead_window"]
    assert overhead["percent_interval"]["low"] <= overhead["percent"] <= overhead["percent_interval"]["high"]
    # one window and none tuned: no line to fit, and why (the fit itself: tests/bench/test_vllm_analysis.py)
    assert report["step_cost"]["sd_stock"] is None and "one window" in report["step_cost"]["reason"]
    # every round recorded with its order and load; the control against stock SD; threads; accuracy beside a
    # recommendation from the comparison's decode of it
    rounds = report["rounds"]
    assert rounds and all(r["phase"] == "timed" and len(r["load_1m"]) == 2 for r in rounds)
    assert {name for r in rounds for name in r["order"]} == {"target", "judge_t0", *settings}
    assert report["control"]["setting"] == "sd_exact" and "biased" in report["control"]
    assert report["threads"]["usable_cpus"] >= 1
    assert all("compared_accuracy" in settings[name] for name in timed)


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
    assert text.count("The comparison's recommendation within") == len(report["recommendations"])
    if shutil.which("nvidia-smi") is None:
        assert "not available" in text


class _Engine:
    """What ``measure_engines`` reads of a started vLLM engine: its config and its engine core's shutdown."""

    def __init__(self, plugin: bool, events: list[str], name: str) -> None:
        from autojudge.vllm_plugin.patches import JUDGE_WORKER

        worker = JUDGE_WORKER if plugin else "vllm.v1.worker.cpu_worker.CPUWorker"
        config = SimpleNamespace(
            parallel_config=SimpleNamespace(worker_cls=worker), use_v2_model_runner=False
        )
        core = SimpleNamespace(shutdown=lambda: events.append(f"stop {name}"))
        self.llm_engine = SimpleNamespace(vllm_config=config, engine_core=core)


@pytest.mark.parametrize("together", [False, True])
def test_a_phase_starts_each_group_of_engines_and_runs_its_rounds(together, monkeypatch) -> None:
    """bench.engines_together: one group, every engine started before its rounds run every setting; otherwise
    a group per engine, each running its settings and stopping before the next starts. Stock engines start
    first, without the plugin's variables; the plugin's hook enters this process before its first engine.
    (Which groups and rounds a plan has: tests/bench/test_vllm_plan.py; the real engines: the pipeline's
    bench stage above, and every real run's worker check.)"""
    events: list[str] = []
    monkeypatch.setattr("autojudge.vllm_plugin.register", lambda: events.append("hook"))
    monkeypatch.setenv("AUTOJUDGE_VLLM_RULE", "judge")
    monkeypatch.setenv("VLLM_PLUGINS", "autojudge")

    def start_engine(spec: EngineSpec, models: object):
        (name,) = spec.settings
        plugins, rule = os.environ.get("VLLM_PLUGINS"), os.environ.get("AUTOJUDGE_VLLM_RULE")
        events.append(f"start {name} plugins={plugins!r} rule={rule!r}")
        return _Engine(spec.plugin, events, name), {name: None}

    def measure(decoders: dict, prompts, accuracy_prompts, batch_sizes, rounds, meter) -> Measured:
        events.append(f"run {'+'.join(decoders)} rounds={len(rounds)}")
        records = [RoundRecord(tuning, order, [1.0, 1.0]) for tuning, order in rounds]
        return Measured({name: {} for name in decoders}, {name: [] for name in decoders}, rounds=records)

    monkeypatch.setattr("autojudge.bench.vllm_engines.start_engine", start_engine)
    monkeypatch.setattr("autojudge.bench.vllm_engines.measure", measure)
    specs = [EngineSpec(0, False, None, {"target": None}), EngineSpec(8, False, None, {"stock": None})]
    specs.append(EngineSpec(8, True, {"rule": "judge"}, {"plugin": None}))
    if together:
        groups = [Group(specs, [(False, ["target", "stock", "plugin"])])]
    else:
        groups = [Group([spec], [(False, list(spec.settings))] * 2) for spec in specs]
    by_window, rounds = measure_phase(Phase(groups, [[1]], [], [1], 0.1), models=None)
    stock, plugin = "plugins='' rule=None", "plugins='autojudge' rule='judge'"
    starts = [f"start target {stock}", f"start stock {stock}", "hook", f"start plugin {plugin}"]
    if together:
        stops = ["stop target", "stop stock", "stop plugin"]
        assert events == [*starts, "run target+stock+plugin rounds=1", *stops]
    else:
        assert events == [
            starts[0], "run target rounds=2", "stop target", starts[1], "run stock rounds=2", "stop stock",
            starts[2], starts[3], "run plugin rounds=2", "stop plugin",
        ]  # fmt: skip
    assert os.environ["VLLM_PLUGINS"] == "autojudge"  # restored after each start
    # each window's settings with their own runners, and every round once, in the order it ran
    assert {window: list(measured.runs) for window, measured in by_window.items()} == {
        0: ["target"], 8: ["stock", "plugin"]
    }  # fmt: skip
    plugins = {name: runner["plugin"] for m in by_window.values() for name, runner in m.runners.items()}
    assert plugins == {"target": PLUGIN_NOT_LOADED, "stock": PLUGIN_NOT_LOADED, "plugin": PLUGIN_ENABLED}
    orders = [record.order for record in rounds]
    one_by_one = [["target"], ["target"], ["stock"], ["stock"], ["plugin"], ["plugin"]]
    assert orders == ([["target", "stock", "plugin"]] if together else one_by_one)
    assert all(not measured.rounds for measured in by_window.values())  # the rounds belong to the whole


def test_threads_are_recorded(monkeypatch) -> None:
    """What bench.json says of threads: torch's, the OpenMP variables, and the cores a spawned worker binds."""
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    record = thread_record(in_process=False, tensor_parallel_size=1)
    assert record["VLLM_CPU_OMP_THREADS_BIND"] == "0" and record["OMP_NUM_THREADS"] == "1"
    assert record["usable_cpus"] >= 1 and record["torch_threads"] >= 1 and not record["engines_in_process"]
