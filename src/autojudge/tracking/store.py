"""Where MLflow keeps runs and models: a local SQLite store under ``mlflow/`` unless
``MLFLOW_TRACKING_URI`` points elsewhere (e.g. the cluster's tracking server).

Writers (the stages that log and register) create the local store; readers (promote, roll back, resolve a
head) need one, and stop with one line where there is none rather than leave an empty store behind (in a
folder that is not the project, say). A tracking server that cannot be reached is one line at once, not
MLflow's retries (minutes)."""

from __future__ import annotations

import os
import socket
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from autojudge.errors import InputError, TrackingError

LOCAL_STORE = Path("mlflow")
CONNECT_TIMEOUT_S = 5.0
_reached: set[str] = set()  # servers this process has reached: probed once


def local_uri(store: Path = LOCAL_STORE) -> str:
    return f"sqlite:///{(store / 'mlflow.db').resolve()}"


def tracking_uri(store: Path = LOCAL_STORE) -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or local_uri(store)


def use_tracking(store: Path = LOCAL_STORE, create: bool = True) -> str:
    """Point MLflow at the project's store; returns the URI in use. Without ``create``, a local store must
    exist already (an InputError names it); a server must accept connections (a TrackingError names it)."""
    uri = tracking_uri(store)
    if uri.startswith("sqlite:///"):
        if not create and uri == local_uri(store) and not (store / "mlflow.db").is_file():
            raise InputError(
                f"no MLflow store at {store / 'mlflow.db'}: nothing is registered here (run this in the "
                "project's directory after `dvc repro`, or set MLFLOW_TRACKING_URI to a tracking server)"
            )
        store.mkdir(parents=True, exist_ok=True)
        _create_once(uri, store)
    elif uri.startswith(("http://", "https://")):
        _check_reachable(uri)
    import mlflow

    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    return uri


def _check_reachable(uri: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Open (and close) a TCP connection to the server of ``uri``; a TrackingError naming it, raised from
    the socket's error (so that orchestration still retries it as transient), when that fails. Skipped
    where a proxy carries the requests."""
    if uri in _reached:
        return
    parts = urlsplit(uri)
    host = parts.hostname or ""
    if urllib.request.getproxies().get(parts.scheme) and not urllib.request.proxy_bypass(host):
        return
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        raise TrackingError(
            f"MLflow tracking server {uri} (MLFLOW_TRACKING_URI) cannot be reached: {reason}"
        ) from error
    _reached.add(uri)


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
