"""The one end-to-end pipeline run of the suite: the toy deployment on a real Prefect server, restarted.

A copy of the repository with small params (``PIPELINE_PARAMS``) is deployed to a Prefect server (SQLite,
loopback) with a process worker; ``prefect deployment run`` starts the whole DVC pipeline, the worker is
stopped with SIGTERM (as a drained node or ``docker stop`` does) while mining (one shard per task, both
tasks at once) has finished some problems and not others, and a second worker finishes the run. The
session fixture ``deployed_pipeline`` (conftest.py) runs this once; tests/flows/test_deployment.py checks the restart and the registration,
tests/bench/test_vllm_bench.py its vLLM benchmark, tests/test_pipeline.py the pipeline's outputs in the same copy, then a no-op
and a partial rerun, and each stage's params reads (recorded as it runs, ``autojudge.params.access``)
against its dvc.yaml ``params:`` list.
Every process started here is stopped here, also on failure.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from helpers import free_port, healthy, set_params

from autojudge.params.access import ACCESS_LOG

PIPELINE_PARAMS = {
    "toy.splits": {"train": 24, "validation": 12, "test": 12, "shifted": 6, "variant": 6, "unseen": 6},
    "toy.code_splits": {"train": 24, "validation": 12, "test": 12},
    "mining.problems": 24,
    "mining.engine": "hf",  # mining on vLLM through the stage: the SmolLM2 smoke run (conftest.smollm2_run)
    "mining.pool_size": 6,  # each shard finishes its problems in two groups: a kill can fall between them
    "train.folds": 3,
    "evaluate.topk": [4],
    "evaluate.recalls": [0.8],
    "evaluate.limit": 4,
    "train.threshold_policy": "accuracy",  # exercises the calibration decode
    "train.calibration_limit": 4,
    "train.calibration_points": 2,
    "selfjudge.problems": 12,
    "selfjudge.engine": "hf",
    "selfjudge.tau": -20.0,  # set directly: on 12 problems the calibrated tau leaves no important row in validation
    "compare.limit": 3,
    "compare.validation_limit": 4,
    "compare.ceiling_problems": 4,  # the ceiling's validation problems, mined in the compare stage
    "crossdomain.limit": 3,
    "compare.splits": ["test", "shifted"],  # shifted: outside the target's competence, no winner
    "tasks.pyfunc.compare.splits": ["test"],  # the code task has no shifted split
    "tasks.pyfunc.compare.limit": 3,  # params.yaml gives the code task its own
    "compare.methods": ["fsd-js", "fsd-js-published", "kl-mask", "target-entropy", "fly", "topk"],
    "compare.rates": [0.5, 1.0],
    "sampled.limit": 3,
    "sampled.seeds": [0],
    "bench.problems": 2,
    "bench.windows": [8],  # three engine starts; the choice among windows: tests/bench/test_vllm_analysis.py
    "bench.overhead_window": 8,
    "bench.thresholds": [1.0],  # accepts every mismatch the head scores below 1
    "bench.repeats": 1,
    "bench.batch_sizes": [1, 2],
    "bench.accuracy_problems": 2,
}
SERVER_START_TIMEOUT = 180
RUN_TIMEOUT = 1500
DEPLOYMENT = "autojudge-pipeline/toy"
PARAMS_READS = "params_reads"  # in the Prefect home: one file per stage process, the params keys it read


def copy_repository(repo: Path, destination: Path) -> Path:
    """The repository's tracked and unignored files (without the MLflow store and results) in a new git repo."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.split()
    for name in files:
        source = repo / name
        if source.is_file() and not name.startswith(("mlflow/", "results/")):
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    subprocess.run(["git", "init", "-q"], cwd=destination, check=True)
    return destination


def own_store_env() -> dict[str, str]:
    """The environment without a tracking URI that earlier tests in this process may have set
    (MLflow 3 exports it), so that the copy uses its own store under mlflow/."""
    return {key: value for key, value in os.environ.items() if key != "MLFLOW_TRACKING_URI"}


def dvc(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    bin_dir = Path(sys.executable).parent  # the stages call `python`: the one running these tests
    env = {**own_store_env(), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run(
        [str(bin_dir / "dvc"), *args], cwd=workdir, env=env, capture_output=True, text=True, timeout=1800
    )
    assert result.returncode == 0, (
        f"dvc {' '.join(args)} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    )
    return result


def stages_run(output: str) -> set[str]:
    """Names (without the foreach key) of the stages a ``dvc repro`` output says it ran."""
    return {
        line.split("'")[1].split("@")[0] for line in output.splitlines() if line.startswith("Running stage")
    }


def model_versions(workdir: Path, name: str) -> list[dict]:
    """Every registered version of ``name`` in the copy's MLflow store, with its card."""
    return _registered_models(workdir, (workdir / "dvc.lock").stat().st_mtime_ns).get(name, [])


@functools.cache
def _registered_models(workdir: Path, lock_state: int) -> dict[str, list[dict]]:
    """Every registered model's versions and cards, read in one interpreter (importing MLflow costs seconds)
    once per state of the copy's dvc.lock (a stage that registers a version also rewrites it)."""
    code = (
        "import json, mlflow; from autojudge.tracking.store import use_tracking;"
        "from autojudge.tracking.heads import version_card; use_tracking(); client = mlflow.MlflowClient();"
        "print(json.dumps({m.name: [dict(version=v.version, description=v.description,"
        " card=version_card(m.name, v.version)) for v in client.search_model_versions(f\"name='{m.name}'\")]"
        " for m in client.search_registered_models()}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=workdir,
        env=own_store_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


@dataclass
class DeployedRun:
    """What the restarted deployment run left: its checkout and what the tests check about it."""

    workdir: Path
    finished_at_kill: dict[str, int]  # finished problem file -> mtime (ns) when the first worker was lost
    finished_at_end: dict[str, int]
    state: str
    state_message: str | None
    run_count: int
    artifacts: dict[str, tuple[str, str]]  # key -> (type, data)
    params_reads: Path  # what every stage process read of the params (``autojudge.params.access``)


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
        wait_for(gone, grace, "the flow run to go back to the queue")
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()

    def kill(self, process: subprocess.Popen) -> None:
        """SIGKILL to the process group: a worker stopped with SIGTERM would put the flow run it has just
        finished back in the queue (its SIGTERM behaviour is reschedule) and start it again."""
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        process.wait()

    def close(self) -> None:
        for process in reversed(self.running):
            self.stop(process, grace=10)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def prefect(env: dict, cwd: Path, *args: str) -> str:
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


def wait_for(condition, timeout: float, what: str, interval: float = 1.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _flow_run(url: str, flow_run_id: str):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: url}), get_client(sync_client=True) as client:
        return client.read_flow_run(flow_run_id)


def _artifacts(url: str, flow_run_id: str) -> dict[str, tuple[str, str]]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: url}), get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )
    return {artifact.key: (artifact.type, artifact.data) for artifact in artifacts}


TASKS = ("arith", "pyfunc")
MODEL_NAMES = {task: f"autojudge-{task}-toy-mixed" for task in TASKS}


def finished_problems(workdir: Path) -> dict[str, int]:
    """Finished problem files of every task's shard -> modification time (ns); not the hidden temporary file
    of a write in progress (``autojudge.io``), which the glob also matches."""
    return {
        str(p.relative_to(workdir)): p.stat().st_mtime_ns
        for p in workdir.glob("mining/*/shards/*/problems/*.json")
        if not p.name.startswith(".")
    }


def _partly_mined(workdir: Path) -> bool:
    shards = [workdir / "mining" / task / "shards" / "0" for task in TASKS]
    return bool(finished_problems(workdir)) and not all((s / "summary.json").exists() for s in shards)


def _prefect_env(home: Path, url: str, workdir: Path) -> dict[str, str]:
    return {
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
        ACCESS_LOG: str(home / PARAMS_READS),
    }


def run_deployment_with_restart(repo: Path, workdir: Path, home: Path) -> DeployedRun:
    """Deploy a small copy of ``repo`` in ``workdir``, run it, lose its worker mid-mining, finish it."""
    copy_repository(repo, workdir)
    set_params(workdir / "params.yaml", PIPELINE_PARAMS)
    url = f"http://127.0.0.1:{free_port()}/api"
    env = _prefect_env(home, url, workdir)
    processes = Processes(env, home)
    try:
        started = time.monotonic()
        processes.start(
            "server", "prefect", "server", "start", "--host", "127.0.0.1", "--port", url.split(":")[2][:-4]
        )
        wait_for(lambda: healthy(url), SERVER_START_TIMEOUT, "the Prefect server")
        print(f"Prefect server up in {time.monotonic() - started:.0f} s")
        prefect(env, workdir, "work-pool", "create", "--type", "process", "cpu")
        prefect(env, workdir, "--no-prompt", "deploy", "-n", "toy")

        first_worker = processes.start("worker-1", "prefect", "worker", "start", "--pool", "cpu")
        output = prefect(env, workdir, "deployment", "run", DEPLOYMENT, "--param", "shards=1")
        flow_run_id = re.search(r"UUID: ([0-9a-f-]{36})", output).group(1)
        wait_for(lambda: _partly_mined(workdir), RUN_TIMEOUT, "the first mined problems", interval=0.2)
        processes.lose_worker(first_worker, lambda: _flow_run(url, flow_run_id).state.name == "AwaitingRetry")
        at_kill = finished_problems(workdir)

        second_worker = processes.start("worker-2", "prefect", "worker", "start", "--pool", "cpu")
        final = wait_for(
            lambda: (run := _flow_run(url, flow_run_id)).state.is_final() and run,
            RUN_TIMEOUT,
            "the flow run",
            interval=3,
        )
        processes.kill(second_worker)  # before the tests use the checkout: nothing may run in it any more
        return DeployedRun(
            workdir,
            at_kill,
            finished_problems(workdir),
            final.state.type.value,
            final.state.message,
            final.run_count,
            _artifacts(url, flow_run_id),
            home / PARAMS_READS,
        )
    finally:
        processes.close()
