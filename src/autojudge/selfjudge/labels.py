"""SelfJudge's token labels: a mismatch is important when its preservation score is at most tau."""

from __future__ import annotations

import math

import numpy as np

from autojudge.errors import InputError


def calibrate_tau(scores: np.ndarray, important: np.ndarray, recall: float = 0.9) -> float:
    """The lowest tau that labels at least ``recall`` of the AutoJudge-important mismatches important.

    SelfJudge (sec. 4.1) calibrates tau on AutoJudge's labels so that the tokens AutoJudge found important
    are also important under SelfJudge's rule s <= tau: tau is the k-th lowest of their scores, with k the
    smallest count that reaches ``recall``.
    """
    if not 0 < recall <= 1:
        raise InputError(f"selfjudge calibration recall must be in (0, 1], got {recall}")
    chosen = np.asarray(scores, dtype=float)[np.asarray(important, dtype=bool)]
    if len(chosen) == 0:
        raise InputError(
            "selfjudge calibration subset holds no important mismatch: set selfjudge.tau directly"
        )
    needed = math.ceil(recall * len(chosen) - 1e-9)
    return float(np.sort(chosen)[needed - 1])


def important_labels(scores: np.ndarray, tau: float) -> np.ndarray:
    """1 where s <= tau (the replacement does not preserve the response), else 0 (acceptable: s > tau)."""
    return (np.asarray(scores, dtype=float) <= tau).astype(int)
