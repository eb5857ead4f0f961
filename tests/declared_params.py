"""What a stage's dvc.yaml ``params:`` list must name: every key the stage read (recorded by
``autojudge.params.access``), and ``tasks.<task>`` for reads through a pipeline task's view (its overrides
may set any key). A declared key covers the keys under it, as DVC compares it whole."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path


def declared_params(root: Path) -> dict[str, list[str]]:
    """Every stage of ``root``'s dvc.yaml (by name, e.g. ``train@arith``) -> its params keys, as DVC
    resolves them against ``root/params.yaml`` (``tasks.${key}`` -> ``tasks.arith``)."""
    from dvc.dependency.param import ParamsDependency
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        return {
            stage.name: [key for dep in stage.deps if isinstance(dep, ParamsDependency) for key in dep.params]
            for stage in repo.index.stages
        }


def recorded_reads(directory: Path) -> dict[str, dict[str, set[str]]]:
    """Every stage's recorded reads (its processes' together): stage -> task ("" for none) -> keys."""
    reads: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for path in directory.glob("*.json"):
        record = json.loads(path.read_text())
        for task, keys in record["reads"].items():
            reads[record["stage"]][task] |= set(keys)
    return reads


def covered(key: str, declared: list[str]) -> bool:
    return any(key == entry or key.startswith(f"{entry}.") for entry in declared)


def undeclared(reads: dict[str, set[str]], declared: list[str]) -> list[str]:
    """The keys that ``reads`` (one stage's, by task) needs and ``declared`` leaves out: each key read, and
    ``tasks.<task>`` for a task's reads (its overrides may set any of them)."""
    needs = {key for keys in reads.values() for key in keys} | {f"tasks.{task}" for task in reads if task}
    return sorted(need for need in needs if not covered(need, declared))
