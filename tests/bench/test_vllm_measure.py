"""The vLLM benchmark's timing: warm-up, interleaved tuning and timed rounds, and the runs' summaries."""

from __future__ import annotations

import statistics

import pytest

from autojudge.bench.energy import EnergyReading
from autojudge.bench.vllm_measure import Run, measure, summarize_runs

NO_ENERGY = EnergyReading.unavailable("none")


class NoMeter:
    """The meter's interface without a GPU: not available, with a reason."""

    reading = EnergyReading.unavailable("no GPU in this test")

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None: ...


def test_measure_warms_up_on_one_batch_then_interleaves_tuning_and_timed_rounds() -> None:
    calls: list[tuple[str, int]] = []

    def decoder(name: str):
        def decode(batch):
            calls.append((name, len(batch)))
            return [([7] * 3, 2) for _ in batch]

        return decode

    rounds = [(True, ["a", "b"]), (False, ["b", "a"])]
    measured = measure(
        {"a": decoder("a"), "b": decoder("b")}, [[1], [2], [3]], [[4]] * 4, [1, 2], rounds, NoMeter
    )
    warm_up = [("a", 2), ("b", 2)]  # one batch of the largest size each
    a, b = ([(name, 1)] * 3 + [(name, 2), (name, 1)] for name in ("a", "b"))  # bs 1, then bs 2
    accuracy = [("a", 2), ("a", 2), ("b", 2), ("b", 2)]  # untimed, at the largest batch size
    assert calls == warm_up + a + b + b + a + accuracy  # each round in its own order
    assert [(r.tuning, r.order, len(r.load_1m)) for r in measured.rounds] == [
        (True, ["a", "b"], 2),
        (False, ["b", "a"], 2),
    ]
    assert measured.rounds[1].report()["phase"] == "timed"
    with pytest.raises(ValueError, match="is not the decoders' settings"):
        measure({"a": decoder("a")}, [[1]], [], [1], [(False, ["a", "b"])], NoMeter)
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
