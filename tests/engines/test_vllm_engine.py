"""vLLM's offline engine in the calling process (``create_llm(in_process=True)``, params ``mining.vllm.in_process``)."""

import os

import pytest
import torch

from autojudge.engines.vllm_engine import create_llm
from autojudge.errors import InputError


def test_in_process_refuses_several_devices_before_importing_vllm():
    with pytest.raises(InputError, match="in_process needs tensor_parallel_size 1"):
        create_llm(True, model="unused", tensor_parallel_size=2)


@pytest.mark.slow
def test_the_session_engine_runs_in_this_process_and_keeps_its_threads(vllm_target_engine, params):
    assert params.mining.vllm.in_process
    assert type(vllm_target_engine.llm.llm_engine.engine_core).__name__ == "InprocClient"
    assert os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING") != "0"  # later engines spawn unless asked
    # this process's share of the cores (all of them, or a worker's share: tests/shares.py), which vLLM
    # in the process would otherwise have dropped to one thread
    assert (
        torch.get_num_threads()
        == int(os.environ["OMP_NUM_THREADS"])
        == max(1, len(os.sched_getaffinity(0)) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", 1)))
    )


def test_a_spawned_cpu_worker_binds_every_core_of_this_process_unless_bound_already(monkeypatch):
    from autojudge.engines.vllm_engine import CPU_BINDING_ENV, spawned_worker_binding

    monkeypatch.delenv(CPU_BINDING_ENV, raising=False)
    cores = ",".join(map(str, sorted(os.sched_getaffinity(0))))
    assert spawned_worker_binding(1) == {CPU_BINDING_ENV: cores}
    assert spawned_worker_binding(2) == {}  # several workers: vLLM's own lists, one per rank
    monkeypatch.setenv(CPU_BINDING_ENV, "1")
    assert spawned_worker_binding(1) == {}
