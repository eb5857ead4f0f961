"""One head per engine: resolve ``judge_head`` once, to a content-addressed file and its hash.

The process that builds an engine (vLLM's frontend: ``LLM(...)`` or the OpenAI server) pins the
head before any worker starts: a ``models:/name@alias`` URI is resolved to its model version, the
version's ``head.safetensors`` is copied to ``<cache>/<sha256>/head.safetensors`` and the engine
config is rewritten to that file and hash. Every worker loads exactly that file and checks the
hash, so moving the alias in MLflow while the engine runs changes nothing until a restart.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from autojudge.errors import InputError

CACHE_ENV = "AUTOJUDGE_HEAD_CACHE"
HEAD_FILE = "head.safetensors"


@dataclass(frozen=True)
class PinnedHead:
    """A judge head resolved for one engine."""

    path: Path  # the file every worker loads
    sha256: str
    source: str  # what the user asked for, and what it resolved to


def head_cache() -> Path:
    """Where pinned heads are kept (``$AUTOJUDGE_HEAD_CACHE``, else ``~/.cache/autojudge/heads``)."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "autojudge" / "heads")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _head_file(location: str) -> Path:
    path = Path(location)
    if path.is_dir():
        path = path / HEAD_FILE
    if not path.is_file():
        raise InputError(f"judge head not found: {location}")
    return path


def _registered_version(uri: str) -> tuple[str, str]:
    """``models:/name@alias`` or ``models:/name/version`` -> (name, version)."""
    from mlflow.exceptions import MlflowException

    from autojudge.tracking.store import use_tracking
    from mlflow import MlflowClient

    body = uri.removeprefix("models:/")
    use_tracking(create=False)
    if "@" in body:
        name, alias = body.split("@", 1)
        try:
            return name, str(MlflowClient().get_model_version_by_alias(name, alias).version)
        except MlflowException as error:
            raise InputError(f"cannot resolve {uri}: {error.message}") from None
    name, _, version = body.partition("/")
    if not version:
        raise InputError(f"judge head {uri}: name a version or an alias (models:/name@alias)")
    return name, version


def _store(path: Path, cache: Path) -> tuple[Path, str]:
    """Copy ``path`` into the content-addressed cache (atomically); returns the copy and its hash."""
    sha = file_sha256(path)
    pinned = cache / sha / HEAD_FILE
    if not pinned.is_file():
        pinned.parent.mkdir(parents=True, exist_ok=True)
        partial = pinned.with_suffix(f".partial-{os.getpid()}")
        shutil.copyfile(path, partial)
        partial.replace(pinned)
    return pinned, sha


def pin_head(location: str, cache: Path | None = None) -> PinnedHead:
    """Resolve a head file, directory or MLflow URI to an immutable file and its sha256."""
    cache = cache or head_cache()
    if location.startswith("models:/"):
        import mlflow

        name, version = _registered_version(location)
        with tempfile.TemporaryDirectory() as scratch:
            try:
                downloaded = mlflow.artifacts.download_artifacts(
                    artifact_uri=f"models:/{name}/{version}", dst_path=scratch
                )
            except mlflow.exceptions.MlflowException as error:
                raise InputError(f"cannot download {location}: {error.message}") from None
            path, sha = _store(_head_file(str(Path(downloaded) / "artifacts")), cache)
        return PinnedHead(path, sha, f"{location} = models:/{name}/{version}")
    if location.startswith("runs:/"):
        raise InputError(f"judge head {location}: register it and use models:/name@alias")
    path, sha = _store(_head_file(location), cache)
    return PinnedHead(path, sha, location)


def check_pinned(path: str, expected_sha256: str) -> None:
    """Refuse a head file whose content is not the one the engine pinned."""
    actual = file_sha256(_head_file(path))
    if actual != expected_sha256:
        raise InputError(
            f"autojudge: judge head {path} has sha256 {actual}, the engine pinned {expected_sha256}"
        )
