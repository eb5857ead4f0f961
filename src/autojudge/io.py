"""Small atomic file helpers: a file is either absent or complete, never half written.

Every file a stage writes goes through ``atomic_path`` (``write_text`` and ``write_json`` use it too):
the writer fills a temporary path beside the target, which is renamed onto the target when it is done.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from autojudge.errors import InputError


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` for any writer (matplotlib, pyarrow, safetensors,
    ``save_pretrained``): renamed onto ``path`` when the block ends, removed if it raises.

    The writer may make a file or a directory there. The temporary ends with ``path``'s suffix, so
    writers that choose a format by suffix (``savefig``) see the right one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp{path.suffix}")
    try:
        yield temporary
        if temporary.is_file():
            _sync(temporary)
        _replace(temporary, path)
    finally:
        _remove(temporary)


def _sync(path: Path) -> None:
    """Flush a written file to disk before it is renamed into place."""
    with path.open("rb") as handle:
        os.fsync(handle.fileno())


def _replace(temporary: Path, path: Path) -> None:
    """Rename ``temporary`` onto ``path``; a directory in the way is moved aside first, then deleted."""
    if not (temporary.is_dir() and path.is_dir()):
        temporary.replace(path)
        return
    old = temporary.with_suffix(".old")
    path.replace(old)
    temporary.replace(path)
    shutil.rmtree(old)


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_json(path: Path, payload: Any) -> None:
    write_text(path, json.dumps(payload, indent=2) + "\n")


def read_json(path: Path) -> Any:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"file not found: {path}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None
