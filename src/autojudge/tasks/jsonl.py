"""Data set files in JSON Lines, validated row by row and handled as `datasets.Dataset`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from datasets import Dataset

from autojudge.errors import InputError
from autojudge.io import atomic_path


def read_jsonl(path: Path, required: Mapping[str, type | tuple[type, ...]]) -> Dataset:
    """Read a JSON Lines file whose rows must hold the ``required`` fields with the given types.

    A missing file, an empty file or a malformed row raises `InputError` naming the file and line.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"data file not found: {path}")
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(f"{path}:{line_number}: not valid JSON ({error.msg})") from None
            if not isinstance(row, dict):
                raise InputError(f"{path}:{line_number}: expected a JSON object, got {type(row).__name__}")
            for field, kind in required.items():
                if field not in row:
                    raise InputError(f"{path}:{line_number}: missing field {field!r}")
                if not isinstance(row[field], kind):
                    raise InputError(
                        f"{path}:{line_number}: field {field!r} has type {type(row[field]).__name__}"
                    )
            rows.append(row)
    if not rows:
        raise InputError(f"data file is empty: {path}")
    return Dataset.from_list(rows)


def write_jsonl(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Write rows as JSON Lines through `datasets`, atomically."""
    with atomic_path(path) as temporary:
        Dataset.from_list([dict(row) for row in rows]).to_json(temporary, lines=True, force_ascii=False)
