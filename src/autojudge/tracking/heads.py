"""Judge heads by location: a file, or an MLflow model URI (``models:/name@alias``, ``runs:/...``)."""

from __future__ import annotations

import json
from pathlib import Path

from autojudge.errors import InputError
from autojudge.heads.artifact import JudgeHead, load_head
from autojudge.tracking.mlflow_errors import mlflow_errors
from autojudge.tracking.store import use_tracking


def _artifacts_dir(uri: str) -> Path:
    use_tracking(create=False)  # a head is read from an existing store, never from a new empty one
    import mlflow

    with mlflow_errors(f"cannot resolve {uri}"):
        return Path(mlflow.artifacts.download_artifacts(artifact_uri=uri))


def version_card(name: str, version: str) -> dict:
    """The card (JSON) stored with a model version."""
    path = _artifacts_dir(f"models:/{name}/{version}") / "artifacts" / "card.json"
    if not path.is_file():
        raise InputError(f"model {name} version {version} has no card.json")
    return json.loads(path.read_text())


def resolve_head(location: str | Path) -> JudgeHead:
    """A head from a file or directory path, or from an MLflow URI such as ``models:/name@production``."""
    text = str(location)
    if text.startswith(("models:/", "runs:/")):
        return load_head(_artifacts_dir(text) / "artifacts" / "head.safetensors")
    return load_head(Path(text))
