"""SelfJudge's token labels: a mismatch is important when its preservation score is at most tau."""

from __future__ import annotations

import numpy as np

from autojudge.errors import InputError


def calibrate_tau(scores: np.ndarray, important: np.ndarray, quantile: float = 0.1) -> float:
    """tau = ``quantile`` of the scores of the mismatches AutoJudge labelled important (SelfJudge, sec. 4.1)."""
    if not 0 <= quantile <= 1:
        raise InputError(f"selfjudge calibration quantile must be in [0, 1], got {quantile}")
    chosen = np.asarray(scores, dtype=float)[np.asarray(important, dtype=bool)]
    if len(chosen) == 0:
        raise InputError(
            "selfjudge calibration subset holds no important mismatch: set selfjudge.tau directly"
        )
    return float(np.quantile(chosen, quantile))


def important_labels(scores: np.ndarray, tau: float) -> np.ndarray:
    """1 where s <= tau (the replacement does not preserve the response), else 0 (acceptable: s > tau)."""
    return (np.asarray(scores, dtype=float) <= tau).astype(int)
