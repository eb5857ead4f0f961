"""The parameters of one orchestrated run: a pair preset, the shard count and the threshold policy."""

from __future__ import annotations

from pathlib import Path

from autojudge.errors import InputError
from autojudge.orchestration.presets import apply_preset
from autojudge.params import Params


def run_overrides(shards: int | None, threshold: dict[str, object]) -> dict:
    """The params changes a run asks for beyond its preset (``None`` values: keep what is there).

    ``threshold``: the threshold policy's ``train`` keys (threshold_policy, target_recall, accuracy_budget).
    """
    if shards is not None and shards < 1:
        raise InputError(f"shards: need at least 1 mining shard, got {shards}")
    changes: dict = {}
    if shards is not None:
        changes["mining"] = {"shards": list(range(shards))}
    train = {key: value for key, value in threshold.items() if value is not None}
    if train:
        changes["train"] = train
    return changes


def configure_run(
    workdir: Path, preset: str, task: str | None, shards: int | None, threshold: dict[str, object]
) -> Params:
    """Make ``workdir/params.yaml`` the checkout's own params with ``preset`` and the run's overrides merged
    in (``autojudge.orchestration.presets``: never over an earlier run's); check the task it names.

    params.yaml is rewritten only when something changes, so an unchanged run leaves DVC up to date.
    """
    params = apply_preset(workdir, preset, run_overrides(shards, threshold))
    if task is not None and params.task.name != task:
        raise InputError(
            f"task {task!r} does not match preset {preset!r}, which runs task {params.task.name!r}"
        )
    return params
