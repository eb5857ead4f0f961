"""Small atomic file helpers: a file is either absent or complete, never half written."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from autojudge.errors import InputError


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    temporary.replace(path)


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
