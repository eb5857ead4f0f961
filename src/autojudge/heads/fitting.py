"""A judge head from params and mined feature rows: the grid-searched fit, the head with its training
facts, and under the out-of-fold protocol one head per fold."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from autojudge.features.spec import PAPER_GROUPS, FeatureSpec
from autojudge.heads.artifact import JudgeHead
from autojudge.heads.out_of_fold import FOLDS_DIR, fit_fold_heads
from autojudge.heads.training import HeadFit, fit_head
from autojudge.models.runtime import task_from
from autojudge.params import Params

if TYPE_CHECKING:
    import torch


def fitted_head(
    params: Params,
    features: np.ndarray,
    labels: np.ndarray,
    groups: np.ndarray,
    spec: FeatureSpec,
    recalls: tuple[float, ...],
    tokenizer_digest: str,
    candidates: tuple[tuple[str, ...], ...] = (PAPER_GROUPS,),
    important_weights: tuple[float, ...] = (1.0,),
    token_class: torch.Tensor | None = None,
    c_grid: list[float] | None = None,
) -> tuple[HeadFit, JudgeHead]:
    """The grid-searched head on these rows (``spec``: their columns' groups), reading the candidate feature
    groups that cross-validation chooses, with its thresholds for ``recalls`` and training facts
    (``tokenizer_digest``: the target tokenizer's hash, which the head is bound to; ``token_class``: the
    table a head reading token classes carries; ``c_grid``: C's candidates, by default train.c_grid)."""
    import torch  # the head's tensors; the rest of training is numpy and scikit-learn

    settings = params.train
    column_sets = {"+".join(chosen): tuple(spec.columns(chosen)) for chosen in candidates}
    fit = fit_head(
        features,
        labels,
        groups,
        settings.c_grid if c_grid is None else c_grid,
        settings.target_recall,
        settings.validation_fraction,
        settings.folds,
        settings.seed,
        recalls,
        column_sets,
        important_weights,
    )
    head_spec = spec.narrowed(tuple(fit.column_set.split("+")))
    info = {
        "best_c": fit.best_c,
        "cv_auc_by_c": {str(c): auc for c, auc in fit.cv_auc_by_c.items()},
        "feature_groups": list(head_spec.groups),
        "important_weight": fit.important_weight,
        "cv_auc_by_candidate": fit.cv_auc_by_candidate,
        "validation_auc": fit.validation_auc,
        "validation_recall": fit.validation_recall,
        "validation_accept_rate": fit.validation_accept_rate,
        "thresholds_by_recall": {str(r): t for r, t in fit.thresholds_by_recall.items()},
        "rows": {"train": fit.train_rows, "validation": fit.validation_rows},
        "important_fraction": float(labels.mean()),
    }
    head = JudgeHead(
        torch.from_numpy(fit.weight),
        fit.bias,
        fit.threshold,
        head_spec,
        params.pair.name,
        params.task.name,
        tokenizer_digest,
        info,
        params.pair.proposer,
        token_class if "token_classes" in head_spec.groups else None,
    )
    return fit, head


def train_fold_heads(
    params: Params,
    features: np.ndarray,
    labels: np.ndarray,
    groups: np.ndarray,
    spec: FeatureSpec,
    tokenizer_digest: str,
    out: Path,
) -> None:
    """Out-of-fold protocol: one head per fold of the mined split, trained without that fold's problems."""
    recalls = (1.0, *params.evaluate.recalls, params.train.target_recall)
    problem_ids = [example.id for example in task_from(params).load_split(params.mining.split)]

    def fit(rows: np.ndarray) -> JudgeHead:
        return fitted_head(
            params, features[rows], labels[rows], groups[rows], spec, recalls, tokenizer_digest
        )[1]

    folds = params.train.out_of_fold_folds
    fit_fold_heads(features, groups, problem_ids, folds, params.train.seed, fit, out / FOLDS_DIR)
    print(f"out of fold: {folds} heads, each trained without one fold of split {params.mining.split!r}")
