"""How ``make test`` shares the suite out to its pytest-xdist workers, and the cores out to the workers.

A pytest plugin (loaded by conftest.py):

* **Shares**: the modules whose tests ask for an expensive session fixture run together on one worker,
  so that the fixture is built once (``SHARES``); every other module runs whole on one worker, with its
  module fixtures built once. The shares come first, longest first, so that the other worker works
  through the modules meanwhile. A module that asks for a share's fixture without being listed in that
  share stops the run with one line (the fixture would be built on two workers).
* **Cores**: each worker gets its share of the cores (``share_the_cores``).

xdist's own ``--dist loadgroup`` cannot do this on pytest 9.2 (it renames node ids, which pytest no longer
lets a plugin do), so the controller schedules through ``ShareScheduling``.
"""

from __future__ import annotations

import os

import pytest
from xdist.scheduler import LoadScopeScheduling

# share -> (its session fixtures, the modules that ask for them), longest first
SHARES = {
    "pipeline": (
        ("deployed_pipeline",),
        (
            "tests/bench/test_vllm_bench.py",
            "tests/evaluation/test_serving.py",
            "tests/flows/test_deployment.py",
            "tests/test_documented_commands.py",
            "tests/test_pipeline.py",
        ),
    ),
    "smollm2": (
        ("smollm2_run", "smollm2_target"),
        ("tests/models/test_finetune_smollm2.py", "tests/models/test_gguf.py", "tests/test_real_pair.py"),
    ),
    "toy-engines": (
        (
            "toy_target_greedy",
            "vllm_target_engine",
            "served_target",
            "vanilla_llm",
            "judge_llm",
            "mined_toy",
            "context_llm",
        ),
        (
            "tests/decoding/test_speculative.py",
            "tests/engines/test_agreement.py",
            "tests/engines/test_openai_engine.py",
            "tests/engines/test_vllm_engine.py",
            "tests/evaluation/test_vllm_sweep.py",
            "tests/vllm_plugin/test_constraints.py",
            "tests/vllm_plugin/test_context_head.py",
            "tests/vllm_plugin/test_engine.py",
            "tests/vllm_plugin/test_sampled.py",
            "tests/vllm_plugin/test_server.py",
            "tests/world/test_quality.py",
        ),
    ),
}
SHARE_OF_MODULE = {module: share for share, (_, modules) in SHARES.items() for module in modules}
SLOW_SHARES = ("pipeline", "smollm2")  # end-to-end runs: only tests marked slow may ask for their fixtures


def share_the_cores() -> None:
    """Under pytest-xdist, each worker's share of the cores: its OpenMP threads (torch, and the stages and
    servers it starts) and the cores its spawned vLLM CPU engines bind to. Without it every worker runs a
    thread per core (OpenMP threads then spin on each other's cores) and vLLM binds every engine to core 0.
    Must run before torch is imported. Without workers, nothing changes."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers:
        return
    cores = sorted(os.sched_getaffinity(0))
    share = max(1, len(cores) // int(workers))
    first = int(os.environ["PYTEST_XDIST_WORKER"].removeprefix("gw")) * share % len(cores)
    os.environ.setdefault("OMP_NUM_THREADS", str(share))
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", ",".join(map(str, cores[first : first + share])))


def share_of(nodeid: str) -> str:
    """The share a test runs in: its module's share, else its module."""
    module = nodeid.split("::")[0]
    return SHARE_OF_MODULE.get(module, module)


def misplaced(module: str, fixturenames: list[str], slow: bool = True) -> str | None:
    """Why a test of ``module`` asking for ``fixturenames`` (``slow``: marked slow) would build a share's
    fixture twice, or an end-to-end run in ``make test-fast``, if it would."""
    for share, (fixtures, _) in SHARES.items():
        asked = [name for name in fixtures if name in fixturenames]
        if asked and SHARE_OF_MODULE.get(module) != share:
            return f"{module} asks for {asked[0]}: list it in share {share!r} of tests/shares.py"
        if asked and share in SLOW_SHARES and not slow:
            return f"{module} asks for {asked[0]} without the slow mark: make test-fast would run it"
    return None


class ShareScheduling(LoadScopeScheduling):
    """xdist's scope scheduling with the shares as scopes, in collection order (shares first)."""

    def __init__(self, config, log=None) -> None:
        config.option.loadscopereorder = False  # xdist would order scopes by their number of tests
        super().__init__(config, log)

    def _split_scope(self, nodeid: str) -> str:
        return share_of(nodeid)


@pytest.hookimpl(optionalhook=True)  # an xdist hook: called when the suite runs on workers
def pytest_xdist_make_scheduler(config, log):
    return ShareScheduling(config, log)


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        fixtures = list(getattr(item, "fixturenames", ()))
        reason = misplaced(item.nodeid.split("::")[0], fixtures, item.get_closest_marker("slow") is not None)
        if reason:
            raise pytest.UsageError(reason)
    order = list(SHARES)  # a stable sort: the shares first, longest first; the modules in their order
    items.sort(key=lambda item: order.index(s) if (s := share_of(item.nodeid)) in order else len(order))
