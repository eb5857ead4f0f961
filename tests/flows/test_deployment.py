"""The toy deployment on a real Prefect server and process worker, in a copy of the repository.

A Prefect server (SQLite, loopback) and a process worker run as subprocesses; the test deploys
prefect.yaml's ``toy`` deployment, runs it with ``prefect deployment run``, stops the worker with SIGTERM
(as a drained node or ``docker stop`` does) while mining has finished some problems and not others, starts
a second worker, and checks that the flow run completes without redoing the finished problems and that
a new model version with its card is in the MLflow registry and in the flow run's artifacts. Every
process it starts is stopped by it, also on failure.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import free_port, healthy, set_params
from test_pipeline import SMALL, _copy_repository

TINY = {
    **SMALL,
    "toy.splits": {"train": 24, "validation": 12, "test": 12, "shifted": 6},
    "mining.problems": 24,
    "mining.pool_size": 6,  # each shard finishes its problems in two groups: a kill can fall between them
    "selfjudge.problems": 12,
    "train.calibration_limit": 4,
    "train.calibration_points": 2,
    "evaluate.limit": 4,
    "compare.limit": 3,
}
SERVER_START_TIMEOUT = 180
RUN_TIMEOUT = 1500
DEPLOYMENT = "autojudge-pipeline/toy"


class Processes:
    """Subprocesses in their own process groups, logging to files; stopped (whole groups) on close."""

    def __init__(self, env: dict[str, str], logs: Path):
        self.env, self.logs, self.running = env, logs, []

    def start(self, name: str, *args: str, cwd: Path | None = None) -> subprocess.Popen:
        log = (self.logs / f"{name}.log").open("ab")
        process = subprocess.Popen(
            args, cwd=cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.running.append(process)
        return process

    def stop(self, process: subprocess.Popen, grace: float = 30) -> None:
        """SIGTERM to the process group, SIGKILL to what is left after ``grace`` seconds."""
        for sig, wait in [(signal.SIGTERM, grace), (signal.SIGKILL, 10)]:
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and _group_alive(process.pid):
                process.poll()
                time.sleep(0.5)
        process.poll()

    def lose_worker(self, worker: subprocess.Popen, gone: Callable[[], bool], grace: float = 90) -> None:
        """A worker node drained: its flow run processes get SIGTERM and the worker never polls again.

        The worker is frozen (SIGSTOP) so that it cannot take the rescheduled run itself; once ``gone()``
        says the run left, the whole process group is killed.
        """
        os.kill(worker.pid, signal.SIGSTOP)
        os.killpg(worker.pid, signal.SIGTERM)
        _wait_for(gone, grace, "the flow run to go back to the queue")
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()

    def close(self) -> None:
        for process in reversed(self.running):
            self.stop(process, grace=10)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _prefect(env: dict, cwd: Path, *args: str) -> str:
    result = subprocess.run(
        [str(Path(sys.executable).parent / "prefect"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, (
        f"prefect {' '.join(args)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return result.stdout


def _wait_for(condition, timeout: float, what: str, interval: float = 1.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


@pytest.fixture(scope="module")
def cluster(repo, tmp_path_factory):
    """A Prefect server with the cpu work pool and the toy deployment of a small copy of the repository."""
    workdir = _copy_repository(repo, tmp_path_factory.mktemp("checkout"))
    set_params(workdir / "params.yaml", TINY)
    home = tmp_path_factory.mktemp("prefect_home")
    url = f"http://127.0.0.1:{free_port()}/api"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_TRACKING_URI"))},
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PREFECT_HOME": str(home),
        "PREFECT_MEMO_STORE_PATH": str(home / "memo_store.toml"),
        "PREFECT_API_URL": url,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_UI_ENABLED": "false",
        "PREFECT_WORKER_QUERY_SECONDS": "2",
        "AUTOJUDGE_CHECKOUT": str(workdir),
        "HF_HUB_OFFLINE": "1",
    }
    processes = Processes(env, home)
    try:
        started = time.monotonic()
        processes.start(
            "server", "prefect", "server", "start", "--host", "127.0.0.1", "--port", url.split(":")[2][:-4]
        )
        _wait_for(lambda: healthy(url), SERVER_START_TIMEOUT, "the Prefect server")
        print(f"Prefect server up in {time.monotonic() - started:.0f} s")
        _prefect(env, workdir, "work-pool", "create", "--type", "process", "cpu")
        _prefect(env, workdir, "--no-prompt", "deploy", "-n", "toy")
        yield workdir, env, url, processes
    finally:
        processes.close()


def _flow_run(url: str, flow_run_id: str):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: url}), get_client(sync_client=True) as client:
        return client.read_flow_run(flow_run_id)


def _artifacts(url: str, flow_run_id: str) -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: url}), get_client(sync_client=True) as client:
        return client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )


def _finished_problems(workdir: Path) -> dict[str, int]:
    """Finished problem files of every shard -> modification time (ns)."""
    return {
        str(p.relative_to(workdir)): p.stat().st_mtime_ns
        for p in workdir.glob("mining/shards/*/problems/*.json")
    }


def _partly_mined(workdir: Path) -> bool:
    shards = [workdir / "mining" / "shards" / str(i) for i in range(2)]
    return bool(_finished_problems(workdir)) and not all((s / "summary.json").exists() for s in shards)


def _model_versions(workdir: Path, name: str) -> list[dict]:
    code = (
        "import json, mlflow; from autojudge.registry.tracking import use_tracking;"
        "from autojudge.registry.versions import version_card; use_tracking();"
        f"vs = mlflow.MlflowClient().search_model_versions(\"name='{name}'\");"
        f"print(json.dumps([dict(version=v.version, description=v.description, card=version_card('{name}', v.version)) for v in vs]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=workdir, capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_deployment_run_survives_a_worker_restart_and_registers_a_model(cluster):
    workdir, env, url, processes = cluster
    first_worker = processes.start("worker-1", "prefect", "worker", "start", "--pool", "cpu")
    output = _prefect(env, workdir, "deployment", "run", DEPLOYMENT, "--param", "shards=2")
    flow_run_id = re.search(r"UUID: ([0-9a-f-]{36})", output).group(1)

    _wait_for(lambda: _partly_mined(workdir), RUN_TIMEOUT, "the first mined problems", interval=0.2)
    processes.lose_worker(first_worker, lambda: _flow_run(url, flow_run_id).state.name == "AwaitingRetry")
    before = _finished_problems(workdir)
    assert before

    processes.start("worker-2", "prefect", "worker", "start", "--pool", "cpu")
    final = _wait_for(
        lambda: (run := _flow_run(url, flow_run_id)).state.is_final() and run,
        RUN_TIMEOUT,
        "the flow run",
        interval=3,
    )
    assert final.state.is_completed(), f"flow run ended {final.state.name}: {final.state.message}"
    assert final.run_count == 2  # started by the first worker, finished by the second

    after = _finished_problems(workdir)
    assert len(after) == TINY["mining.problems"]
    assert {path: after[path] for path in before} == before  # finished problems were not mined again

    registered = json.loads((workdir / "registry" / "registered.json").read_text())
    versions = _model_versions(workdir, registered["model_name"])
    assert [str(v["version"]) for v in versions] == [registered["version"]] == ["1"]
    assert versions[0]["card"]["model_name"] == "autojudge-arith-toy"
    assert versions[0]["description"]  # the card's markdown

    [artifact] = [a for a in _artifacts(url, flow_run_id) if a.key == "registered-model"]
    assert artifact.type == "markdown" and "autojudge-arith-toy version 1" in artifact.data
    assert versions[0]["description"] in artifact.data
