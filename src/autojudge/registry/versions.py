"""Model versions of judge heads: registering, promoting through gates, rolling back, loading."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from autojudge.errors import InputError
from autojudge.heads.artifact import JudgeHead, load_head
from autojudge.registry.tracking import use_tracking

CANDIDATE, PRODUCTION = "candidate", "production"
HISTORY_TAG = "autojudge.production_history"


def _client():
    from mlflow import MlflowClient

    use_tracking()
    return MlflowClient()


def register_version(model_uri: str, name: str, description: str, tags: dict[str, str], alias: str) -> str:
    """Create a version of ``name`` from a logged model, describe and tag it, and point ``alias`` at it."""
    import mlflow

    use_tracking()
    version = mlflow.register_model(model_uri, name).version
    client = _client()
    client.update_model_version(name, version, description=description)
    for key, value in tags.items():
        client.set_model_version_tag(name, version, key, value)
    client.set_registered_model_alias(name, alias, version)
    return str(version)


def _artifacts_dir(uri: str) -> Path:
    from mlflow.exceptions import MlflowException

    import mlflow

    use_tracking()
    try:
        return Path(mlflow.artifacts.download_artifacts(artifact_uri=uri))
    except MlflowException as error:
        raise InputError(f"cannot resolve {uri}: {error.message}") from None


def version_card(name: str, version: str) -> dict:
    """The card (JSON) stored with a model version."""
    path = _artifacts_dir(f"models:/{name}/{version}") / "artifacts" / "card.json"
    if not path.is_file():
        raise InputError(f"model {name} version {version} has no card.json")
    return json.loads(path.read_text())


def resolve_head(location: str | Path) -> JudgeHead:
    """A head from a file or directory path, or from an MLflow URI such as ``models:/name@production``."""
    text = str(location)
    if text.startswith(("models:/", "runs:/")):
        return load_head(_artifacts_dir(text) / "artifacts" / "head.safetensors")
    return load_head(Path(text))


@dataclass
class GateResult:
    passed: bool
    reasons: list[str]
    use_instead: str | None = None  # the training-free rule to use when it beats the head


def training_free_gate(card: dict, max_accuracy_drop: float) -> str | None:
    """Why the head loses to a training-free rule at the accuracy budget (None: it wins or no comparison)."""
    comparison = card.get("comparison")
    if not comparison:
        return None
    from autojudge.comparison import LABELS, best_within, head_versus_rules

    split = next(iter(comparison["splits"]))
    rows = comparison["splits"][split]["settings"]
    target_accuracy = comparison["splits"][split]["target_accuracy"]
    table = {
        method: {"budget": best_within(rows, method, target_accuracy, max_accuracy_drop)}
        for method in {row["method"] for row in rows}
    }
    head, rule, best_rule = head_versus_rules(table, "budget")
    if best_rule is None or (head is not None and head["mat"] > best_rule["mat"]):
        return None
    head_mat = f"MAT {head['mat']:.2f}" if head else "no threshold within the budget"
    return (
        f"{LABELS[rule]} ({best_rule['setting']}) reaches MAT {best_rule['mat']:.2f} on the {split} split "
        f"within {100 * max_accuracy_drop:.1f} accuracy points of the target; the head: {head_mat}"
    )


def check_gates(card: dict, max_accuracy_drop: float, min_mat_gain: float) -> GateResult:
    """Promotion gates on a card's headline figures: accuracy drop vs exact SD and MAT gain."""
    figures = card["evaluation"]["headline"]
    reasons = []
    drop = figures["accuracy_drop_vs_exact_sd"]
    if drop > max_accuracy_drop + 1e-12:
        reasons.append(
            f"accuracy drop vs exact SD is {100 * drop:.2f} points > budget {100 * max_accuracy_drop:.2f}"
        )
    gain = figures["mat_gain_vs_exact_sd"]
    if gain < min_mat_gain:
        reasons.append(f"MAT gain over exact SD is {gain:.2f}x < floor {min_mat_gain:.2f}x")
    use_instead = training_free_gate(card, max_accuracy_drop)
    if use_instead:
        reasons.append(f"a training-free rule does at least as well: {use_instead}")
    return GateResult(passed=not reasons, reasons=reasons, use_instead=use_instead)


def _history(client, name: str) -> list[str]:
    tags = client.get_registered_model(name).tags
    return json.loads(tags.get(HISTORY_TAG, "[]"))


def _alias_version(client, name: str, alias: str) -> str | None:
    from mlflow.exceptions import MlflowException

    try:
        return str(client.get_model_version_by_alias(name, alias).version)
    except MlflowException:
        return None


def promote(
    name: str, version: str | None, max_accuracy_drop: float, min_mat_gain: float
) -> tuple[str, GateResult]:
    """Move ``production`` to ``version`` (default: the candidate) if its card passes the gates."""
    client = _client()
    version = version or _alias_version(client, name, CANDIDATE)
    if version is None:
        raise InputError(f"model {name} has no version to promote (no '{CANDIDATE}' alias)")
    result = check_gates(version_card(name, version), max_accuracy_drop, min_mat_gain)
    if result.passed:
        current = _alias_version(client, name, PRODUCTION)
        if current != version:
            history = _history(client, name) + ([current] if current else [])
            client.set_registered_model_tag(name, HISTORY_TAG, json.dumps(history))
            client.set_registered_model_alias(name, PRODUCTION, version)
    return version, result


def rollback(name: str) -> str:
    """Point ``production`` back at the version it had before the last promotion; returns that version."""
    client = _client()
    history = _history(client, name)
    if not history:
        raise InputError(f"model {name} has no earlier production version to roll back to")
    previous = history.pop()
    client.set_registered_model_tag(name, HISTORY_TAG, json.dumps(history))
    client.set_registered_model_alias(name, PRODUCTION, previous)
    return previous
