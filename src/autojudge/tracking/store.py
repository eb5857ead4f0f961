"""Where MLflow keeps runs and models: a local SQLite store under ``mlflow/`` unless
``MLFLOW_TRACKING_URI`` points elsewhere (e.g. the cluster's tracking server)."""

from __future__ import annotations

import os
from pathlib import Path

LOCAL_STORE = Path("mlflow")


def local_uri(store: Path = LOCAL_STORE) -> str:
    return f"sqlite:///{(store / 'mlflow.db').resolve()}"


def tracking_uri(store: Path = LOCAL_STORE) -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or local_uri(store)


def use_tracking(store: Path = LOCAL_STORE) -> str:
    """Point MLflow at the project's store; returns the URI in use."""
    import mlflow

    uri = tracking_uri(store)
    if uri.startswith("sqlite:///"):
        store.mkdir(parents=True, exist_ok=True)
        _create_once(uri, store)
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    return uri


def _create_once(uri: str, store: Path) -> None:
    """Create (or migrate) a SQLite store while holding a lock on ``store``: stages that run in parallel
    (train@arith and train@pyfunc) would otherwise both run MLflow's migrations on a new database, and one
    fails ("table _alembic_tmp_experiments already exists")."""
    import fcntl

    from mlflow import MlflowClient

    with (store / ".create.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        client = MlflowClient(tracking_uri=uri, registry_uri=uri)
        client.search_experiments(max_results=1)
        client.search_registered_models(max_results=1)


def experiment(name: str, store: Path = LOCAL_STORE) -> str:
    """The id of experiment ``name``, created with its artifacts under ``mlflow/artifacts`` when local."""
    import mlflow

    found = mlflow.get_experiment_by_name(name)
    if found is not None:
        return found.experiment_id
    location = None
    if mlflow.get_tracking_uri() == local_uri(store):  # a server keeps its own artifact store
        location = (store / "artifacts").resolve().as_uri()
    return mlflow.create_experiment(name, artifact_location=location)


def model_name(task: str, pair: str, override: str | None = None) -> str:
    """Registered model name: ``autojudge-<task>-<pair>`` unless params set one."""
    return override or f"autojudge-{task}-{pair}"
