"""The vLLM tokens/s benchmark's real run: the pipeline's bench stage (slow)."""

from __future__ import annotations

import json
import shutil

import pytest
from pipeline_run import PIPELINE_PARAMS


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
    # one window: no line to fit (the fit itself: tests/bench/test_vllm_analysis.py)
    assert report["step_cost"]["sd_stock"] is None


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


# run_benchmark loads the plugin's hook in its process: a process of its own, not the suite's
_TOGETHER = """
import json, sys
from pathlib import Path
from autojudge.bench.vllm_bench import run_benchmark
from autojudge.params import load_params

params = load_params("params.yaml")
bench = params.bench.model_copy(
    update={"engines_together": True, "problems": 2, "accuracy_problems": 1, "batch_sizes": [1], "thresholds": []}
)
report = run_benchmark(params.model_copy(update={"bench": bench}), Path("heads/arith/head.safetensors"))
print(json.dumps(report))
"""


@pytest.mark.slow
def test_engines_together_time_every_setting_in_one_interleaved_run(pipeline_bench) -> None:
    """bench.engines_together: the target alone, stock SD and the plugin's engine (no comparison: no
    recommendation engines) alive at once, each in its own processes, the stock ones without the plugin;
    lossless SD still emits the target's tokens on both, and the card says every ratio shares its minutes."""
    import subprocess
    import sys

    from autojudge.bench.vllm_report import card_section, section_markdown

    _, workdir = pipeline_bench
    done = subprocess.run(
        [sys.executable, "-c", _TOGETHER], cwd=workdir, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["engines_together"] and report["engine_starts"] == 3
    settings = report["settings"]
    assert report["target"]["runner"]["plugin"] == settings["sd_stock"]["runner"]["plugin"] == "not loaded"
    assert {figures["runner"]["plugin"] for name, figures in settings.items() if name != "sd_stock"} == {
        "loaded, enabled"
    }
    assert all(report["sd_stock_equals_target"].values()) and all(report["sd_exact_equals_target"].values())
    assert report["judge_overhead"]["same_tokens_as_exact"]
    text = "\n".join(section_markdown(card_section(report)))
    assert "Every engine was alive at once" in text and "one after another" not in text
