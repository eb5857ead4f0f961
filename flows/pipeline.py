"""Prefect flow: the AutoJudge DVC pipeline on a worker, each stage a Prefect task run through DVC.

DVC stays the single source of truth for what is up to date (its lock file and cache decide whether a
stage runs); Prefect decides where and when, retries transient failures with backoff (network errors,
servers unavailable, stages killed from outside: ``autojudge.orchestration.transient``; a bug or bad input
fails at once), runs the mining shards in parallel and shows progress (every output line of a stage is
logged to its task run). How the stages are driven, and why parallel shards do not go through
``dvc repro``, is explained in ``autojudge.orchestration.dvc_stages``. Each task's registered model
version and its card end up in the flow run's artifacts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from prefect import flow, get_run_logger, task, unmapped
from prefect.artifacts import create_link_artifact, create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.tasks import exponential_backoff

from autojudge.io import read_json
from autojudge.orchestration.dvc_stages import (
    Stage,
    device_waves,
    repro_stage,
    run_stage_command,
    stage_generations,
)
from autojudge.orchestration.run_params import configure_run
from autojudge.orchestration.transient import is_transient
from autojudge.tracking.store import tracking_uri, use_tracking

RETRIES = 2
BACKOFF_SECONDS = 10  # first retry after 10 s, then 20 s


def retry_if_transient(task, task_run, state) -> bool:
    """Prefect's retry condition (a plain function, as Prefect requires): retry a failed stage only when its
    error is transient."""
    try:
        state.result()
    except Exception as error:
        return is_transient(error)
    return False


STAGE_TASK = {
    "retries": RETRIES,
    "retry_delay_seconds": exponential_backoff(backoff_factor=BACKOFF_SECONDS),
    "retry_condition_fn": retry_if_transient,
    "cache_policy": NO_CACHE,  # DVC, not Prefect, decides what is up to date
    "task_run_name": "{stage.name}",
}


@task(**STAGE_TASK)
def repro(workdir: Path, stage: Stage) -> bool:
    """One stage through ``dvc repro --single-item``; whether it ran."""
    return repro_stage(workdir, stage, get_run_logger().info)


@task(**STAGE_TASK)
def run_in_parallel(workdir: Path, stage: Stage, env: dict[str, str]) -> bool:
    """One of several independent stages (a mining shard): its command, then ``dvc commit``."""
    return run_stage_command(workdir, stage, get_run_logger().info, env)


@task(cache_policy=NO_CACHE)
def publish_models(workdir: Path) -> dict[str, dict]:
    """Each task's registered model version and its card as the flow run's artifacts."""
    from mlflow import MlflowClient

    use_tracking(workdir / "mlflow")
    uri = tracking_uri(workdir / "mlflow")
    published = {}
    for path in sorted((workdir / "registry").glob("*/registered.json")):
        registered = read_json(path)
        name, version = registered["model_name"], registered["version"]
        card = MlflowClient().get_model_version(name, version).description
        key = f"registered-model-{path.parent.name}"
        create_markdown_artifact(
            key=key,
            markdown=f"# {name} version {version}\n\n`{registered['model_uri']}` (alias "
            f"`{registered['alias']}`), tracking `{uri}`\n\n{card}",
            description=f"{name} version {version} and its card",
        )
        if uri.startswith(("http://", "https://")):
            create_link_artifact(
                f"{uri.rstrip('/')}/#/models/{name}/versions/{version}",
                link_text=f"{name} version {version}",
                key=f"{key}-link",
            )
        published[path.parent.name] = registered
    return published


@flow(name="autojudge-pipeline")
def autojudge_pipeline(
    preset: str = "toy",
    task: str | None = None,
    shards: int | None = None,
    threshold_policy: Literal["recall", "accuracy"] | None = None,
    target_recall: float | None = None,
    accuracy_budget: float | None = None,
    devices: list[str] | None = None,
    workdir: str = ".",
) -> dict[str, dict]:
    """The DVC pipeline of the checkout in ``workdir``, from its own params.yaml changed by the parameters
    (``autojudge.orchestration.presets``: params.yaml becomes a view of the checkout's own file, kept in
    .preset/; each run starts from that file, never from an earlier run's).

    preset: pair preset merged over params.yaml (``toy``: none); task: the task the run is for, checked
    against the preset; shards: number of mining shards (``mining.shards``); threshold_policy,
    target_recall, accuracy_budget: how the judge threshold is chosen (``train.*``: ``recall`` keeps
    target_recall of the important tokens on validation, ``accuracy`` the largest threshold within
    accuracy_budget); devices: GPU ids shared out to parallel stages, one per device at a time (none: all
    at once, sharing the worker's CPU cores). Parameters left out keep what params.yaml (with the preset) says.
    """
    root = Path(workdir).resolve()
    threshold = {
        "threshold_policy": threshold_policy,
        "target_recall": target_recall,
        "accuracy_budget": accuracy_budget,
    }
    configure_run(root, preset, task, shards, threshold)
    for generation in stage_generations(root):
        if len(generation) == 1:
            repro(root, generation[0])
            continue
        for wave in device_waves(generation, devices):
            stages, envs = zip(*wave, strict=True)
            run_in_parallel.map(unmapped(root), list(stages), list(envs)).result()
    return publish_models(root)
