"""Helpers shared by tests: parameter files with overrides, loopback ports and health checks."""

from __future__ import annotations

import socket
import urllib.request
from pathlib import Path

import yaml

from autojudge.rules.build import build_rule
from autojudge.rules.config import RuleConfig


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


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def healthy(url: str) -> bool:
    """Whether ``url``/health answers 200 (vLLM's and Prefect's servers both serve it)."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def rule(name: str, threshold: float | None = None, window: int = 32, head=None, **keys):
    """The registry's rule ``name`` for windows of ``window`` draft tokens."""
    return build_rule(RuleConfig(name, threshold=threshold, **keys), window, head)
