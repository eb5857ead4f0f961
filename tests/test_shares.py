"""The suite's worker shares (tests/shares.py): fixtures built once, cores shared out."""

import os

from shares import SHARES, misplaced, share_of, share_the_cores


def test_a_shared_fixture_keeps_its_modules_on_one_worker():
    assert share_of("tests/test_pipeline.py::test_x") == share_of("tests/flows/test_deployment.py::test_y")
    assert share_of("tests/io/test_io.py::test_z") == "tests/io/test_io.py"  # any other module: itself


def test_a_module_outside_the_share_of_its_fixture_is_named():
    assert misplaced("tests/test_pipeline.py", ["deployed_pipeline", "params"]) is None
    reason = misplaced("tests/new/test_new.py", ["params", "smollm2_run"])
    assert (
        reason == "tests/new/test_new.py asks for smollm2_run: list it in share 'smollm2' of tests/shares.py"
    )
    assert misplaced("tests/new/test_new.py", ["params"]) is None
    assert next(iter(SHARES)) == "pipeline"  # the longest share is scheduled first


def test_an_end_to_end_fixture_outside_the_slow_tests_is_named():
    reason = misplaced("tests/test_pipeline.py", ["deployed_pipeline"], slow=False)
    assert reason == (
        "tests/test_pipeline.py asks for deployed_pipeline without the slow mark: make test-fast would run it"
    )
    assert misplaced("tests/engines/test_vllm_engine.py", ["vllm_target_engine"], slow=False) is None


def test_each_worker_gets_its_cores(monkeypatch):
    for name in ("OMP_NUM_THREADS", "VLLM_CPU_OMP_THREADS_BIND"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    share_the_cores()
    assert (os.environ["OMP_NUM_THREADS"], os.environ["VLLM_CPU_OMP_THREADS_BIND"]) == ("2", "2,3")
