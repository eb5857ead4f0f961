"""The vLLM tokens/s benchmark: measurement and aggregation logic, and one tiny real run (slow)."""

from __future__ import annotations

import json
import shutil
import statistics

import pytest
import torch

from autojudge.bench.energy import EnergyReading
from autojudge.bench.vllm_bench import (
    Run,
    check_plan,
    measure,
    speculative_settings,
    step_cost_fit,
    summarize_runs,
)
from autojudge.errors import InputError


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


def _run(seconds: float, outputs: list[list[int]], passes: int) -> Run:
    return Run(seconds, sum(map(len, outputs)), passes, outputs, EnergyReading.unavailable("none"))


def test_summary_takes_medians_and_scores_the_first_run() -> None:
    outputs = [[1, 5, 5], [0, 5]]
    runs = [_run(2.0, outputs, 4), _run(1.0, outputs, 4), _run(4.0, outputs, 4)]
    summary = summarize_runs(runs, CountingTask(), ["a", "b"], WordTokenizer())
    assert summary["median_seconds"] == 2.0
    assert summary["tokens_per_s"] == statistics.median([5 / 2.0, 5 / 1.0, 5 / 4.0])
    assert summary["accuracy"] == 0.5 and summary["mat"] == 5 / 4 and summary["step_ms"] == 500.0
    assert summary["same_tokens_every_repeat"] is True
    assert summary["energy"] == {"available": False, "reason": "none"}
    changed = summarize_runs([*runs, _run(1.0, [[0], [0]], 2)], CountingTask(), ["a", "b"], WordTokenizer())
    assert changed["same_tokens_every_repeat"] is False


def test_energy_summary_is_median_joules_per_1k_tokens() -> None:
    readings = [
        EnergyReading(True, "nvidia-smi", None, ["T4"], joules, joules / 2, 2.0, 20)
        for joules in (30, 10, 20)
    ]
    runs = [Run(2.0, 500, 100, [[1] * 500], reading) for reading in readings]
    energy = summarize_runs(runs, CountingTask(), ["a"], WordTokenizer())["energy"]
    assert energy["joules"] == 20 and energy["joules_per_1k_tokens"] == 40 and energy["gpus"] == ["T4"]


def test_measure_warms_up_then_interleaves_repeats() -> None:
    calls: list[tuple[str, int]] = []

    def decoder(name: str):
        def decode(batch):
            calls.append((name, len(batch)))
            return [([7] * 3, 2) for _ in batch]

        return decode

    measured = measure({"a": decoder("a"), "b": decoder("b")}, [[1], [2], [3]], 2, 2, NoMeter)
    warm_up = [("a", 2), ("a", 1), ("b", 2), ("b", 1)]
    one_round = [("a", 1)] * 3 + [("a", 2), ("a", 1)] + [("b", 1)] * 3 + [("b", 2), ("b", 1)]
    assert calls == warm_up + one_round + one_round
    runs = measured.runs["a"]["batched"]
    assert len(runs) == 2 and runs[0].tokens == 9 and runs[0].target_passes == 6
    assert runs[0].energy.reason == "no GPU in this test"


def test_step_cost_fit_recovers_a_line() -> None:
    assert step_cost_fit({4: 3.0 + 0.5 * 4, 8: 3.0 + 0.5 * 8, 16: 3.0 + 0.5 * 16}) == {
        "fixed_ms": 3.0,
        "per_draft_token_ms": 0.5,
    }
    assert step_cost_fit({8: 4.0}) is None


def test_settings_and_plan_checks() -> None:
    names = [s.name for s in speculative_settings([0.5, 0.8814336657, 0.5])]
    assert names == ["sd_exact", "autojudge_t0.5", "autojudge_t0.8814"]
    with pytest.raises(InputError, match="overhead_window 32 must be one of"):
        check_plan([8, 16], 32, 2, 8)
    with pytest.raises(InputError, match="repeats and problems"):
        check_plan([8], 8, 0, 8)


@pytest.fixture(scope="module")
def tiny_bench(tmp_path_factory, params, repo, arith_dir):
    """One real run: 3 problems, windows 4 and 8, 2 repeats (3 vLLM engines, a few minutes on CPU)."""
    from autojudge.bench.vllm_bench import run_benchmark, write_outputs
    from autojudge.features.hidden_states import FeatureSpec
    from autojudge.heads.artifact import JudgeHead
    from autojudge.models.pair import load_tokenizer, tokenizer_hash
    from autojudge.vllm_plugin.heads import hidden_size

    directory = tmp_path_factory.mktemp("bench")
    target, draft = repo / params.pair.target, repo / params.pair.draft
    spec = FeatureSpec("target", hidden_size(target), hidden_size(draft))
    # weight 0, bias 0: p(important) = 0.5 everywhere, so threshold 0.9 accepts every mismatch
    head = JudgeHead(
        torch.zeros(spec.dimension), 0.0, 0.9, spec, "toy", "arith", tokenizer_hash(load_tokenizer(target))
    )
    head_path = head.save(directory / "head.safetensors")
    bench = params.bench.model_copy(
        update={
            "problems": 3,
            "windows": [4, 8],
            "overhead_window": 8,
            "thresholds": [0.4],
            "repeats": 2,
            "batch_size": 3,
        }
    )
    settings = params.model_copy(
        update={
            "bench": bench,
            "task": params.task.model_copy(update={"data_dir": arith_dir}),
            "pair": params.pair.model_copy(update={"target": target, "draft": draft}),
            "decoding": params.decoding.model_copy(update={"max_new_tokens": 96}),
        }
    )
    report = run_benchmark(settings, head_path)
    write_outputs(report, directory / "bench.json", directory / "curve", directory / "bench.md")
    return report, directory


@pytest.mark.slow
def test_tiny_benchmark_is_consistent(tiny_bench) -> None:
    report, _ = tiny_bench
    assert report["engine_starts"] == 3
    assert all(report["sd_exact_equals_target"].values())  # lossless SD emits the target's tokens
    assert set(report["settings"]) == {"sd_exact", "autojudge_t0.4", "autojudge_t0.9"}
    for figures in report["settings"].values():
        assert figures["window"] in (4, 8)
        for mode in ("bs1", "batched"):
            summary = figures[mode]
            assert len(summary["seconds_per_repeat"]) == 2
            assert summary["median_seconds"] == pytest.approx(
                statistics.median(summary["seconds_per_repeat"]), abs=1e-3
            )
            assert 0 <= summary["accuracy"] <= 1 and summary["tokens"] > 0
    sd, loose, strict = (
        report["settings"][n]["bs1"] for n in ("sd_exact", "autojudge_t0.9", "autojudge_t0.4")
    )
    assert strict["accuracy"] == sd["accuracy"]  # p = 0.5 >= 0.4: nothing extra accepted
    assert loose["mat"] > sd["mat"]  # every mismatch accepted: longer accepted runs
    overhead = report["judge_overhead"]
    assert overhead["same_tokens_as_exact"] and overhead["window"] == 8
    assert overhead["percent"] == pytest.approx(
        100 * (overhead["judge_t0_step_ms"] / overhead["exact_step_ms"] - 1), abs=0.01
    )
    assert report["headline"]["autojudge_setting"] == "autojudge_t0.9"
    assert report["step_cost"] is not None


@pytest.mark.slow
def test_tiny_benchmark_writes_metrics_plot_and_tables(tiny_bench) -> None:
    report, directory = tiny_bench
    assert json.loads((directory / "bench.json").read_text())["headline"] == report["headline"]
    assert (directory / "curve.png").stat().st_size > 5_000
    assert (
        len((directory / "curve.csv").read_text().splitlines()) == 1 + 3 * 2 + 1
    )  # 3 settings x 2 windows + judge_t0 at W=8
    text = (directory / "bench.md").read_text()
    assert "### Speed (vLLM)" in text and "### Energy" in text
    if shutil.which("nvidia-smi") is None:
        assert "not available" in text and "nvidia-smi not found" in text


def _measured(settings: dict[str, tuple[float, list[list[int]], int]]):
    from autojudge.bench.vllm_bench import Measured

    return Measured(
        {
            name: {mode: [_run(s, out, passes)] for mode in ("bs1", "batched")}
            for name, (s, out, passes) in settings.items()
        }
    )


def test_report_tunes_windows_and_explains_a_short_ratio() -> None:
    from autojudge.bench.vllm_bench import build_report, speed_table

    right, wrong = [[1, 5, 5, 5]], [[0, 5, 5, 5]]
    target = _measured({"target": (1.0, right, 4)})
    by_window = {  # step time 2 + 0.25 W ms per pass; AutoJudge doubles MAT but answers wrong
        4: _measured(
            {
                "sd_exact": (0.006, right, 2),
                "autojudge_t0.5": (0.003, wrong, 1),
                "judge_t0": (0.0063, right, 2),
            }
        ),
        8: _measured({"sd_exact": (0.008, right, 2), "autojudge_t0.5": (0.004, wrong, 1)}),
    }
    report = build_report(CountingTask(), ["q"], WordTokenizer(), target, by_window, 0.5, 4, 1.5)
    assert (
        report["settings"]["sd_exact"]["window"] == 4 and report["settings"]["autojudge_t0.5"]["window"] == 4
    )
    assert report["sd_exact_equals_target"] == {4: True, 8: True}
    headline = report["headline"]
    assert headline["tokens_per_s_ratio_vs_sd"] == 2.0 and headline["accuracy_drop_vs_sd_points"] == 100.0
    assert headline["mat_ratio_vs_sd"] == 2.0
    assert headline["why_below_min_ratio"] is None  # 2.0 >= 1.5
    assert report["judge_overhead"]["percent"] == 5.0 and report["judge_overhead"]["same_tokens_as_exact"]
    assert report["step_cost"] == {"fixed_ms": 2.0, "per_draft_token_ms": 0.25}
    short = build_report(CountingTask(), ["q"], WordTokenizer(), target, by_window, 0.5, 4, 2.5)
    why = short["headline"]["why_below_min_ratio"]
    assert "2.00 ms + 0.250 ms per draft token" in why and "tokens/s gain only 2.00x" in why
    rows = speed_table({**report, "batch_size": 8})
    assert [r["setting"] for r in rows] == ["target alone", "SD exact", "AutoJudge"]
    assert rows[2]["threshold"] == 0.5 and rows[2]["speedup over SD"] == 2.0


def test_card_shows_speed_and_energy_tables_even_without_gpu(params) -> None:
    from autojudge.bench.vllm_bench import build_report, header
    from autojudge.features.hidden_states import FeatureSpec
    from autojudge.heads.artifact import JudgeHead
    from autojudge.registry.card import build_card, card_markdown

    right = [[1, 5, 5, 5]]
    target = _measured({"target": (1.0, right, 4)})
    by_window = {
        8: _measured(
            {"sd_exact": (0.01, right, 2), "autojudge_t0.5": (0.01, right, 2), "judge_t0": (0.01, right, 2)}
        )
    }
    bench = {
        **header(params.bench, 1),
        **build_report(CountingTask(), ["q"], WordTokenizer(), target, by_window, 0.5, 8, 1.3),
    }
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
    assert card["vllm_bench"]["speed"][1]["setting"] == "SD exact"
    assert "## Speed and energy with vLLM" in text and "| AutoJudge | 0.5 | 8 |" in text
    energy = card["vllm_bench"]["energy"][0]
    assert (
        energy["joules"] == "not available" and energy["GPU or reason"] == "none"
    )  # the reason, shown in the table
    assert "### Why the ratio is below 1.3" in text  # 1.0x: explained from step times
