"""Logging the head's training run and, after evaluation, its model and card.

MLflow is imported by the functions that log, and the pyfunc model (torch, pandas) by the one that logs
it: the training stage loads neither with this module.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from autojudge.heads.artifact import load_head
from autojudge.io import write_text
from autojudge.tracking.store import experiment, use_tracking


def _flat(prefix: str, values: dict) -> dict[str, str]:
    return {
        f"{prefix}.{key}": json.dumps(value) if isinstance(value, list | dict) else str(value)
        for key, value in values.items()
    }


def log_training_run(
    experiment_name: str, params: dict[str, dict], metrics: dict[str, float], artifacts: list[Path]
) -> str:
    """A new MLflow run with the training params, metrics and files; returns its id."""
    import mlflow

    use_tracking()
    with mlflow.start_run(experiment_id=experiment(experiment_name), run_name="train-head") as run:
        for section, values in params.items():
            mlflow.log_params(_flat(section, values))
        mlflow.log_metrics(metrics)
        for path in artifacts:
            mlflow.log_artifact(str(path))
    return run.info.run_id


def log_model_and_card(
    run_id: str,
    head_path: Path,
    card: dict,
    card_markdown: str,
    metrics: dict[str, float],
    artifacts: list[Path],
) -> str:
    """Add evaluation results, the pyfunc model and its card to the run; returns the model URI.

    The model's signature has one double column per feature of the head, and its input example (two rows,
    columns f0..f{n-1}) is also stored as the ``dataframe_split`` payload that ``mlflow models serve`` takes.
    """
    import mlflow
    from autojudge.registry.pyfunc import JudgeHeadModel, input_example, model_signature  # torch, pandas

    head = load_head(head_path)
    use_tracking()
    with tempfile.TemporaryDirectory() as scratch, mlflow.start_run(run_id=run_id):
        card_json, card_md = Path(scratch) / "card.json", Path(scratch) / "card.md"
        write_text(card_json, json.dumps(card, indent=2))
        write_text(card_md, card_markdown)
        mlflow.log_metrics(metrics)
        for path in [*artifacts, card_json, card_md]:
            mlflow.log_artifact(str(path), artifact_path="card")
        info = mlflow.pyfunc.log_model(
            name="judge_head",
            python_model=JudgeHeadModel(),
            artifacts={"head": str(head_path), "card_json": str(card_json), "card_md": str(card_md)},
            signature=model_signature(head.features.dimension),
            input_example=input_example(head),
            pip_requirements=["autojudge"],
        )
    return info.model_uri
