"""Fake vLLM benchmark measurements and their report (`build_report` over runs of known seconds, tokens and
target passes), for the tests of the benchmark's figures and of its tables."""

from __future__ import annotations

import pytest

from autojudge.bench.energy import EnergyReading
from autojudge.bench.vllm_analysis import build_report
from autojudge.bench.vllm_measure import Measured, Run
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


def _report(min_ratio: float = 1.1, overhead_window: int = 8, tuned: bool = False):
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
    if tuned:  # windows chosen before the timed phase: each setting timed at its own window only
        stock, plugin = by_window[1], by_window[8]
        by_window = {
            1: stock.only(["sd_stock"], stock.runners["sd_stock"]),
            8: plugin.only(["sd_exact", "autojudge_t0.5", "judge_t0"], plugin.runners["sd_exact"]),
        }
    bench = BenchParams(
        windows=[1, 8],
        overhead_window=overhead_window,
        batch_sizes=[1, 8],
        bootstrap_samples=200,
        min_ratio=min_ratio,
    )
    return build_report(CountingTask(), WordTokenizer(), ["q"] * 4, target, by_window, 0.5, bench)


@pytest.fixture
def fake_report():
    """``fake_report(min_ratio=1.1, overhead_window=8, tuned=False)``: the report of the fake measurements
    (``tuned``: each setting timed at one window only, as after window tuning)."""
    return _report


@pytest.fixture
def target_seconds() -> list[float]:
    """Seconds per problem of the fakes' target alone at batch size 1 (the other settings' unit)."""
    return BASE
