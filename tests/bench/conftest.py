"""Fake vLLM benchmark measurements and their report (`build_report` over runs of known seconds, tokens and
target passes), for the tests of the benchmark's figures and of its tables."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from autojudge.bench.energy import EnergyReading
from autojudge.bench.vllm_analysis import build_report
from autojudge.bench.vllm_bench import score_check_decode
from autojudge.bench.vllm_measure import Measured, RoundRecord, Run
from autojudge.bench.vllm_plan import make_plan, plan_rounds
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
# the comparison's test decode: the target alone and exact SD right on 8 problems, the judge at 0.5 on 7
COMPARISON = {
    "chosen": {"1": {"judge": "judge t=0.5 W=8", "exact": "exact SD W=8", "topk": None}},
    "validation": [
        {"setting": "judge t=0.5 W=8", "method": "judge", "threshold": 0.5},
        {"setting": "exact SD W=8", "method": "exact", "threshold": 0.0},
    ],
    "problems": {
        "test": {
            "target alone": {"correct": [True] * 8},
            "exact SD W=8": {"correct": [True] * 8},
            "judge t=0.5 W=8": {"correct": [True] * 7 + [False]},
        }
    },
}
THREADS = {
    "cpus": 2,
    "usable_cpus": 2,
    "torch_threads": 2,
    "OMP_NUM_THREADS": "2",
    "OMP_WAIT_POLICY": "PASSIVE",
    "VLLM_CPU_OMP_THREADS_BIND": "0,1",
    "engines_in_process": False,
}
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


def fake_plan(params, bench: BenchParams, comparison: dict | None = None):
    """The plan of ``bench`` on the repository's params, for a head at threshold 0.5 and 6 one-token prompts."""
    head = SimpleNamespace(threshold=0.5, features=SimpleNamespace(source="target"))
    return make_plan(
        params.model_copy(update={"bench": bench}), "head", head, comparison or {}, [[1]] * 6, {2}
    )


def _report(params, min_ratio: float = 1.1, tuned: bool = False, tuning_step_ms: dict | None = None):
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
    bench = BenchParams(windows=[1, 8], batch_sizes=[1, 8], bootstrap_samples=200, min_ratio=min_ratio)
    scored = score_check_decode(CountingTask(), WordTokenizer(), ["q"] * 4, target, by_window)
    report = build_report(fake_plan(params, bench, COMPARISON), target, by_window, scored, tuning_step_ms)
    names = ["target", "sd_stock", "sd_exact", "autojudge_t0.5", "judge_t0"]
    rounds = [
        RoundRecord(tuning, order, [1.0, 1.5]) for tuning, order in plan_rounds(names, 1, 2, bench.seed)
    ]
    return {**report, "rounds": [record.report() for record in rounds], "threads": THREADS}


@pytest.fixture
def plan_of(params):
    """``plan_of(bench, comparison=None)``: :func:`fake_plan` on the repository's params."""
    return lambda bench, comparison=None: fake_plan(params, bench, comparison)


@pytest.fixture
def fake_report(params):
    """``fake_report(min_ratio=1.1, tuned=False, tuning_step_ms=None)``: the report of the fake measurements
    (``tuned``: each setting timed at one window only, as after window tuning, whose step times are
    ``tuning_step_ms``)."""
    return lambda **kwargs: _report(params, **kwargs)


@pytest.fixture
def target_seconds() -> list[float]:
    """Seconds per problem of the fakes' target alone at batch size 1 (the other settings' unit)."""
    return BASE


@pytest.fixture
def comparison() -> dict:
    """The fakes' compare.json: its test decode of the target alone, exact SD and the judge at 0.5."""
    return COMPARISON
