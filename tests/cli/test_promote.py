"""``autojudge promote`` in the wrong place or order: one clear line and status 2, never a traceback, never
a store created as a side effect, and no wait on MLflow's retries."""

import socket
import subprocess
import sys
import time

import pytest

NO_STORE = "error: no MLflow store at mlflow/mlflow.db: nothing is registered here"
CREATE_STORE = "from autojudge.tracking.store import use_tracking; use_tracking()"


@pytest.fixture
def local_store(monkeypatch):
    """MLflow's local store (``mlflow/`` in the working directory), whatever the caller's environment says."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


def _one_line(result) -> str:
    """The error line of a failed command: status 2, no traceback, nothing else on stderr."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_promote_outside_the_project_stops_in_one_line_and_creates_nothing(
    autojudge, repo, tmp_path, local_store
):
    assert _one_line(autojudge("promote", cwd=tmp_path)) == "error: parameters file not found: params.yaml"
    for extra in ((), ("--rollback",)):
        result = autojudge("promote", *extra, "--params", str(repo / "params.yaml"), cwd=tmp_path)
        assert _one_line(result).startswith(NO_STORE)
    assert list(tmp_path.iterdir()) == []  # no mlflow/mlflow.db, no lock file


def test_rollback_before_anything_is_registered_is_one_line(autojudge, repo, tmp_path, local_store):
    created = subprocess.run(
        [sys.executable, "-c", CREATE_STORE], cwd=tmp_path, capture_output=True, timeout=300
    )
    assert created.returncode == 0 and (tmp_path / "mlflow" / "mlflow.db").is_file(), created.stderr
    result = autojudge("promote", "--rollback", "--params", str(repo / "params.yaml"), cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    error = result.stderr.splitlines()[-1]  # after MLflow's log lines about opening the store
    assert error.startswith("error: cannot roll back model autojudge-") and error.endswith("not found")


def test_an_unreachable_tracking_server_is_one_line_naming_it_at_once(autojudge, repo, tmp_path, monkeypatch):
    """MLflow's own retries (7, exponential backoff) are left at their defaults: the command must not wait
    for them."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        uri = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    for name in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    for extra in ((), ("--rollback",)):
        started = time.monotonic()
        result = autojudge("promote", *extra, "--params", str(repo / "params.yaml"), cwd=tmp_path)
        assert time.monotonic() - started < 60  # MLflow's retries alone take minutes
        assert _one_line(result) == (
            f"error: MLflow tracking server {uri} (MLFLOW_TRACKING_URI) cannot be reached: Connection refused"
        )
    assert list(tmp_path.iterdir()) == []
