"""Model versions of judge heads: registering, promoting through gates, rolling back."""

from __future__ import annotations

import json
from dataclasses import dataclass

from autojudge.errors import InputError
from autojudge.tracking.heads import version_card
from autojudge.tracking.mlflow_errors import is_not_found, mlflow_errors
from autojudge.tracking.store import use_tracking

CANDIDATE, PRODUCTION = "candidate", "production"
HISTORY_TAG = "autojudge.production_history"


def _client():
    """A client of the registry, which must exist (promoting or rolling back creates no store)."""
    use_tracking(create=False)
    from mlflow import MlflowClient

    return MlflowClient()


def register_version(model_uri: str, name: str, description: str, tags: dict[str, str], alias: str) -> str:
    """Create a version of ``name`` from a logged model, describe and tag it, and point ``alias`` at it."""
    import mlflow

    use_tracking()
    with mlflow_errors(f"cannot register {model_uri} as {name}"):
        version = mlflow.register_model(model_uri, name).version
        client = _client()
        client.update_model_version(name, version, description=description)
        for key, value in tags.items():
            client.set_model_version_tag(name, version, key, value)
        client.set_registered_model_alias(name, alias, version)
    return str(version)


@dataclass
class GateResult:
    passed: bool
    reasons: list[str]
    use_instead: str | None = None  # the method to use when the head does not significantly beat it


def comparison_gate(card: dict, max_accuracy_drop: float) -> tuple[str | None, str | None]:
    """(why the head fails the comparison gate, the method to use instead); (None, None) when the head is
    within the budget on the comparison's first test split and its MAT is significantly above the best
    training-free rule's there (the interval of the ratio excludes 1), or when the card has no comparison."""
    comparison = card.get("comparison")
    if not comparison:
        return None, None
    from autojudge.evaluation.comparison import LABELS, budget_key

    split = next(iter(comparison["splits"]))
    budget = budget_key(max_accuracy_drop)
    verdicts = comparison["decisions"][split]
    if budget not in verdicts:
        return (
            f"the comparison has no budget of {budget} point(s) (compare.budgets: {', '.join(verdicts)})",
            None,
        )
    verdict = verdicts[budget]
    if verdict.get("outside_competence"):
        return f"the {split} split is outside the target's competence: the comparison ranks nothing", None
    rule = verdict.get("best_rule")
    use = f"{LABELS[rule['method']]} ({rule['setting']})" if rule else "exact SD"
    if not verdict.get("head_within_budget"):
        return f"the head is not within {budget} point(s) of target greedy on the {split} split", use
    against = verdict.get("head_vs_best_rule")
    if against is None or against["low"] > 1.0:
        return None, None
    return (
        f"its MAT over {use} on the {split} split is {against['value']:.2f}x "
        f"[{against['low']:.2f}, {against['high']:.2f}]: not significantly above 1",
        use,
    )


def sampled_gate(card: dict, max_accuracy_drop: float, min_mat_gain: float, temperature: float) -> list[str]:
    """Why the head fails the gates under sampling at ``temperature`` (the card's stage-sampled figures of
    the head at its threshold on the last split: test), or nothing."""
    section = card.get("sampled") or {}
    if not section.get("enabled") or section.get("temperature") != temperature:
        return [
            f"sampled: the card has no figures at temperature {temperature} (stage sampled; sampled.temperature)"
        ]
    split = list(section["splits"])[-1]
    row = section["splits"][split]["methods"][section["head_setting"]]
    drop, gain = row["accuracy_drop"]["value"], row["mat_gain_vs_exact_sd"]["value"]
    reasons = []
    if drop > max_accuracy_drop + 1e-12:
        reasons.append(
            f"sampled (T={temperature}, {split}): accuracy drop vs exact speculative sampling is "
            f"{100 * drop:.2f} points > budget {100 * max_accuracy_drop:.2f}"
        )
    if gain < min_mat_gain:
        reasons.append(
            f"sampled (T={temperature}, {split}): MAT gain is {gain:.2f}x < floor {min_mat_gain:.2f}x"
        )
    return reasons


def check_gates(
    card: dict, max_accuracy_drop: float, min_mat_gain: float, temperature: float | None = None
) -> GateResult:
    """Promotion gates: the card's headline accuracy drop vs exact SD and MAT gain, the comparison, and
    with ``temperature`` the same gates on the sampled figures."""
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
    why, use_instead = comparison_gate(card, max_accuracy_drop)
    if why:
        reasons.append(f"comparison: {why}" + (f"; use {use_instead} instead" if use_instead else ""))
    if temperature is not None:
        reasons += sampled_gate(card, max_accuracy_drop, min_mat_gain, temperature)
    return GateResult(passed=not reasons, reasons=reasons, use_instead=use_instead)


def _history(client, name: str) -> list[str]:
    tags = client.get_registered_model(name).tags
    return json.loads(tags.get(HISTORY_TAG, "[]"))


def _alias_version(client, name: str, alias: str) -> str | None:
    """The version ``alias`` points at; None when the model or the alias does not exist."""
    from mlflow.exceptions import MlflowException

    try:
        return str(client.get_model_version_by_alias(name, alias).version)
    except MlflowException as error:
        if is_not_found(error):
            return None
        raise


def promote(
    name: str,
    version: str | None,
    max_accuracy_drop: float,
    min_mat_gain: float,
    temperature: float | None = None,
) -> tuple[str, GateResult]:
    """Move ``production`` to ``version`` (default: the candidate) if its card passes the gates."""
    with mlflow_errors(f"cannot promote model {name}"):
        client = _client()
        version = version or _alias_version(client, name, CANDIDATE)
        if version is None:
            raise InputError(f"model {name} has no version to promote (no '{CANDIDATE}' alias)")
        result = check_gates(version_card(name, version), max_accuracy_drop, min_mat_gain, temperature)
        if result.passed:
            current = _alias_version(client, name, PRODUCTION)
            if current != version:
                history = _history(client, name) + ([current] if current else [])
                client.set_registered_model_tag(name, HISTORY_TAG, json.dumps(history))
                client.set_registered_model_alias(name, PRODUCTION, version)
    return version, result


def rollback(name: str) -> str:
    """Point ``production`` back at the version it had before the last promotion; returns that version."""
    with mlflow_errors(f"cannot roll back model {name}"):
        client = _client()
        history = _history(client, name)
        if not history:
            raise InputError(f"model {name} has no earlier production version to roll back to")
        previous = history.pop()
        client.set_registered_model_tag(name, HISTORY_TAG, json.dumps(history))
        client.set_registered_model_alias(name, PRODUCTION, previous)
    return previous
