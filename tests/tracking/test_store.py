"""The local MLflow store: stages that open a new one at the same moment all get it; readers create none."""

import subprocess
import sys

import pytest

from autojudge.errors import InputError
from autojudge.tracking.store import use_tracking

OPEN_STORE = "import sys; from pathlib import Path; from autojudge.tracking.store import use_tracking; use_tracking(Path(sys.argv[1]))"


def test_parallel_stages_creating_one_store_all_succeed(tmp_path, monkeypatch):
    """train@arith and train@pyfunc run at once in a fresh checkout: without the lock, both run MLflow's
    migrations on the new database and one fails."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    store = tmp_path / "mlflow"
    processes = [
        subprocess.Popen([sys.executable, "-c", OPEN_STORE, str(store)], stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    failures = [p.stderr.read()[-500:] for p in processes if p.wait() != 0]
    assert failures == []
    assert (store / "mlflow.db").is_file()


def test_a_reader_creates_no_store(tmp_path, monkeypatch):
    """Promoting, rolling back and resolving a head read a store: where there is none they say so in one
    line, and leave no ``mlflow/`` behind (in a directory that is not the project, say)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with pytest.raises(InputError, match=r"^no MLflow store at mlflow/mlflow.db: nothing is registered here"):
        use_tracking(create=False)
    assert list(tmp_path.iterdir()) == []
