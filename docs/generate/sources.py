"""The committed files a page's figures come from, and how figures are written."""

from __future__ import annotations

import csv
import functools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


class SourceError(Exception):
    """A block or citation names a file git ignores or lacks, or a key that file does not hold."""


@functools.cache
def tracked() -> frozenset[str] | None:
    """The paths git tracks or would track (committed, or new and not ignored); None outside a checkout."""
    command = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    try:
        out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return frozenset(out.split("\0")) - {""}


def committed(path: str | Path) -> Path:
    """``path`` (relative to the repository) as a file, refused where git ignores it (a DVC output, a local
    file): figures come from what is committed."""
    name = Path(os.path.normpath(path)).as_posix()
    files = tracked()
    if files is not None and name not in files:
        raise SourceError(f"{name}: not a file git tracks (figures come from committed files only)")
    return ROOT / name


@functools.cache
def _parsed(path: Path, mtime: float) -> Any:  # mtime: a rewritten file is read again
    if path.suffix == ".json":
        return json.loads(path.read_text())
    if path.suffix in (".yaml", ".yml"):
        return yaml.safe_load(path.read_text())
    if path.suffix == ".csv":
        with path.open(newline="") as handle:
            return list(csv.DictReader(handle))
    return path.read_text()


def load(path: str | Path) -> Any:
    """A committed JSON, YAML or CSV file parsed (a list of rows for CSV), any other file as text."""
    file = committed(path)
    return _parsed(file, file.stat().st_mtime)


def tracked_under(folder: str | Path) -> list[Path]:
    """The files git tracks (or would) under ``folder``, relative to the repository."""
    prefix = Path(os.path.normpath(folder)).as_posix() + "/"
    files = tracked()
    if files is None:
        return sorted(p.relative_to(ROOT) for p in (ROOT / folder).rglob("*") if p.is_file())
    return sorted(Path(name) for name in files if name.startswith(prefix) and (ROOT / name).is_file())


def exists(path: str | Path) -> bool:
    """Whether ``path`` is a committed file (a stage that has not run yet has none)."""
    try:
        committed(path)
    except SourceError:
        return False
    return (ROOT / path).is_file()


def lookup(data: Any, key: str) -> Any:
    """The value at ``key``: names joined by ``/``; in a list, ``field=value`` picks the first row whose
    field equals value and a number picks by position."""
    for part in key.split("/"):
        if isinstance(data, list):
            if "=" in part:
                field, _, want = part.partition("=")
                rows = [row for row in data if str(row.get(field)) == want]
                if not rows:
                    raise SourceError(f"no row with {field} = {want}")
                data = rows[0]
            else:
                data = data[int(part)]
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            raise SourceError(f"no key {part!r}")
    return data


def link(page: Path, target: str | Path) -> str:
    """``target`` (relative to the repository) as a link relative to ``page``'s folder."""
    return Path(os.path.relpath(ROOT / target, (ROOT / page).parent)).as_posix()


POINTS = {"value", "point", "median"}  # what an interval entry's files call its point


def bounds(entry: dict) -> tuple[float, float, float]:
    """(point, low, high) of an interval entry, whichever name its point has."""
    point = next(entry[name] for name in ("value", "point", "median") if name in entry)
    return point, entry["low"], entry["high"]


def interval(
    entry: dict | None, scale: float = 1.0, unit: str = "", signed: bool = False, digits: int = 2
) -> str:
    """``1.05x [1.02, 1.09]``: an interval entry, scaled, with a unit and sign as asked."""
    if not entry:
        return "-"
    sign = "+" if signed else ""
    point, low, high = (scale * v for v in bounds(entry))
    return f"{point:{sign}.{digits}f}{unit} [{low:{sign}.{digits}f}, {high:{sign}.{digits}f}]"


def percent(value: float, digits: int = 1) -> str:
    return f"{100 * value:.{digits}f}%"
