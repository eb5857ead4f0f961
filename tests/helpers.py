"""Helpers shared by tests: parameter files with overrides."""

from __future__ import annotations

from pathlib import Path

import yaml


def set_params(path: Path, overrides: dict) -> None:
    """Apply dotted-key ``overrides`` (e.g. ``{"mining.problems": 8}``) to a params file in place."""
    params = yaml.safe_load(path.read_text())
    for dotted, value in overrides.items():
        section = params
        *parents, leaf = dotted.split(".")
        for key in parents:
            section = section.setdefault(key, {})
        section[leaf] = value
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def write_params(repo: Path, directory: Path, arith_dir: Path, overrides: dict) -> Path:
    """The project's params with absolute paths to the toy pair and ``arith_dir``, plus ``overrides``."""
    params = yaml.safe_load((repo / "params.yaml").read_text())
    path = directory / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    set_params(
        path,
        {
            "task.data_dir": str(arith_dir),
            "pair.draft": str(repo / params["pair"]["draft"]),
            "pair.target": str(repo / params["pair"]["target"]),
            **overrides,
        },
    )
    return path
