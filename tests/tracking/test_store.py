"""The local MLflow store: stages that open a new one at the same moment all get it."""

import subprocess
import sys

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
