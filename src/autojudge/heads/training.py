"""Training the judge head: logistic regression, grid search with problem-grouped folds.

Problems are split into a fitting part and a validation part (no problem in both). The grid
search runs grouped cross-validation on the fitting part with ROC-AUC as the score, over C and, for
the context head, over candidate column sets (feature groups) and weights on important rows; the best
model is refit on the whole fitting part, and the threshold is chosen on the validation part so
that it flags ``target_recall`` of the important tokens. Standardisation is
folded into the weights, so the head stays one dot product on raw hidden states.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score, roc_curve
from sklearn.model_selection import GridSearchCV, GroupKFold, GroupShuffleSplit
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from autojudge.errors import InputError


class ColumnSelector(TransformerMixin, BaseEstimator):
    """Keeps ``columns`` (None: all) of the feature rows: the grid's choice among feature groups."""

    def __init__(self, columns: tuple[int, ...] | None = None) -> None:
        self.columns = columns

    def fit(self, features: np.ndarray, labels: np.ndarray | None = None) -> ColumnSelector:
        return self

    def transform(self, features: np.ndarray) -> np.ndarray:
        return features if self.columns is None else features[:, list(self.columns)]


@dataclass
class HeadFit:
    """A fitted head in raw-feature space (over the chosen columns), with how it was chosen."""

    weight: np.ndarray
    bias: float
    threshold: float
    best_c: float
    column_set: str  # the chosen candidate of ``column_sets`` ("all": every column)
    important_weight: float  # the chosen weight of important rows in the loss
    cv_auc_by_candidate: dict[str, float]  # "<column set> w=<weight>" -> best mean CV ROC-AUC over C
    cv_auc_by_c: dict[float, float]
    validation_auc: float
    validation_recall: float  # recall of important tokens at the threshold
    validation_accept_rate: float  # share of unimportant tokens accepted at the threshold
    thresholds_by_recall: dict[float, float]  # validation thresholds for other recall targets
    roc: dict[str, list[float]]  # validation ROC curve (fpr, tpr, thresholds)
    train_rows: int
    validation_rows: int


def threshold_for_recall(probabilities: np.ndarray, labels: np.ndarray, target_recall: float) -> float:
    """The threshold t at which flagging p >= t catches ``target_recall`` of the important rows.

    It is the (1 - recall) quantile of the important rows' scores, interpolated linearly in log-odds
    between neighbouring rows, so that a high recall is not decided by one outlying row alone
    (recall 1.0 gives the lowest important score).
    """
    important = probabilities[labels.astype(bool)]
    if len(important) == 0:
        raise InputError("validation problems hold no important mismatch: cannot choose a threshold")
    clipped = np.clip(important.astype(np.float64), 1e-12, 1 - 1e-12)
    log_odds = np.quantile(np.log(clipped / (1 - clipped)), 1 - target_recall, method="linear")
    return float(1 / (1 + np.exp(-log_odds)))


def fit_head(
    features: np.ndarray,
    labels: np.ndarray,
    groups: np.ndarray,
    c_grid: list[float],
    target_recall: float,
    validation_fraction: float,
    folds: int,
    seed: int,
    sweep_recalls: tuple[float, ...] = (),
    column_sets: dict[str, tuple[int, ...]] | None = None,
    important_weights: tuple[float, ...] = (1.0,),
) -> HeadFit:
    """Grid-search C (and the column set and weight on important rows), choose the recall-targeted
    threshold, return raw-space weights over the chosen columns."""
    labels = labels.astype(int)
    if len(np.unique(labels)) < 2:
        raise InputError("mined data hold only one class of mismatch: cannot train a judge head")
    sets = column_sets or {"all": tuple(range(features.shape[1]))}
    splitter = GroupShuffleSplit(n_splits=1, test_size=validation_fraction, random_state=seed)
    fit_index, validation_index = next(splitter.split(features, labels, groups))
    pipeline = Pipeline(
        [
            ("select", ColumnSelector()),
            ("scale", StandardScaler()),
            ("logistic", LogisticRegression(max_iter=2000)),
        ]
    )
    weights = [None if w == 1 else {0: 1.0, 1: float(w)} for w in important_weights]
    search = GridSearchCV(
        pipeline,
        {
            "logistic__C": list(c_grid),
            "select__columns": list(sets.values()),
            "logistic__class_weight": weights,
        },
        scoring="roc_auc",
        cv=GroupKFold(n_splits=min(folds, len(np.unique(groups[fit_index])))),
        refit=True,
    )
    search.fit(features[fit_index], labels[fit_index], groups=groups[fit_index])
    best = search.best_estimator_.named_steps
    scaler, logistic = best["scale"], best["logistic"]
    weight = logistic.coef_[0] / scaler.scale_
    bias = float(logistic.intercept_[0] - np.dot(logistic.coef_[0], scaler.mean_ / scaler.scale_))
    validation_probabilities = search.predict_proba(features[validation_index])[:, 1]
    validation_labels = labels[validation_index]
    threshold = threshold_for_recall(validation_probabilities, validation_labels, target_recall)
    flagged = validation_probabilities >= threshold
    fpr, tpr, roc_thresholds = roc_curve(validation_labels, validation_probabilities)
    name_of = {columns: name for name, columns in sets.items()}
    chosen_weight = best["logistic"].class_weight
    results = search.cv_results_
    by_candidate: dict[str, float] = {}
    by_c: dict[float, float] = {}
    for params, score in zip(results["params"], results["mean_test_score"], strict=True):
        weight_of = 1.0 if params["logistic__class_weight"] is None else params["logistic__class_weight"][1]
        key = f"{name_of[params['select__columns']]} w={weight_of:g}"
        by_candidate[key] = max(by_candidate.get(key, -np.inf), float(score))
        if (
            params["select__columns"] == best["select"].columns
            and params["logistic__class_weight"] == chosen_weight
        ):
            by_c[float(params["logistic__C"])] = float(score)
    return HeadFit(
        weight=weight.astype(np.float32),
        bias=bias,
        threshold=threshold,
        best_c=float(search.best_params_["logistic__C"]),
        column_set=name_of[best["select"].columns],
        important_weight=1.0 if chosen_weight is None else float(chosen_weight[1]),
        cv_auc_by_candidate=by_candidate,
        cv_auc_by_c=by_c,
        validation_auc=float(roc_auc_score(validation_labels, validation_probabilities)),
        validation_recall=float(flagged[validation_labels == 1].mean()),
        validation_accept_rate=float((~flagged[validation_labels == 0]).mean()),
        thresholds_by_recall={
            r: threshold_for_recall(validation_probabilities, validation_labels, r) for r in sweep_recalls
        },
        roc={"fpr": fpr.tolist(), "tpr": tpr.tolist(), "thresholds": np.clip(roc_thresholds, 0, 1).tolist()},
        train_rows=len(fit_index),
        validation_rows=len(validation_index),
    )
