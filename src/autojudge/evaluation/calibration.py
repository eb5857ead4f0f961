"""The "accuracy" threshold policy: pick the head's threshold by decoding a calibration split.

Recall on validation rows is a proxy; what a user budgets is answer accuracy. This policy decodes
the task's calibration split (not the test split) with the judge rule at a geometric grid of
thresholds and keeps the largest whose accuracy drop against target-only greedy stays in budget.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from autojudge.errors import InputError
from autojudge.evaluation.setting import Setting
from autojudge.params import Params


def candidate_thresholds(low: float, high: float, points: int) -> list[float]:
    """``points`` thresholds spaced geometrically from ``low`` to ``high`` (both included)."""
    if not 0 < low <= high:
        raise InputError(f"calibration needs 0 < low <= high thresholds, got {low} and {high}")
    if low == high:
        return [low]
    return [float(t) for t in np.geomspace(low, high, points)]


def largest_within_budget(rows: list[dict], target_accuracy: float, budget: float) -> float:
    """The largest judge threshold whose accuracy is at least ``target_accuracy - budget``."""
    allowed = [r["threshold"] for r in rows if target_accuracy - r["accuracy"] <= budget + 1e-12]
    if not allowed:
        return min(r["threshold"] for r in rows)
    return max(allowed)


def calibrate_threshold(params: Params, head_path: Path, low: float, high: float) -> tuple[float, list[dict]]:
    """Decode the calibration split at thresholds in [low, high]; the chosen one and every row."""
    from autojudge.evaluation.sweep import run_settings, summary_row  # the model stack: only this decodes

    settings = params.train
    window = params.evaluate.window
    grid = [
        Setting("judge", window, threshold=t)
        for t in candidate_thresholds(low, high, settings.calibration_points)
    ]
    results = run_settings(
        params,
        [Setting("target"), *grid],
        settings.calibration_split,
        settings.calibration_limit,
        head_path,
    )
    rows = [summary_row(setting, summary) for setting, summary, _ in results]
    target_accuracy = rows[0]["accuracy"]
    return largest_within_budget(rows[1:], target_accuracy, settings.accuracy_budget), rows
