import numpy as np
import pytest

from autojudge.errors import InputError
from autojudge.heads.training import fit_head, threshold_for_recall


def _synthetic(rows=600, dimension=6, seed=0):
    """Important rows differ along the first feature; 20 rows per problem."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(rows) < 0.3).astype(int)
    features = rng.normal(size=(rows, dimension)) * 3 + 10
    features[:, 0] += 9 * labels
    groups = np.repeat(np.arange(rows // 20), 20)
    return features.astype(np.float32), labels, groups


def test_threshold_for_recall_keeps_the_requested_share_of_important_rows():
    probabilities = np.array([0.9, 0.8, 0.7, 0.6, 0.1, 0.05])
    labels = np.array([1, 1, 1, 1, 0, 0])
    # at order statistics: recall 1 keeps every important row, 2/3 the top three of four ...
    assert threshold_for_recall(probabilities, labels, 1.0) == pytest.approx(0.6)
    assert threshold_for_recall(probabilities, labels, 2 / 3) == pytest.approx(0.7)
    assert threshold_for_recall(probabilities, labels, 1 / 3) == pytest.approx(0.8)
    # ... and between them, linear in log-odds: halfway from 0.7 to 0.8
    logit = np.log(np.array([0.7, 0.8]) / (1 - np.array([0.7, 0.8])))
    halfway = 1 / (1 + np.exp(-logit.mean()))
    assert threshold_for_recall(probabilities, labels, 0.5) == pytest.approx(halfway)
    assert 0.6 < threshold_for_recall(probabilities, labels, 0.998) < 0.61


def test_fit_head_learns_a_separable_direction_in_raw_feature_space():
    features, labels, groups = _synthetic()
    fit = fit_head(
        features,
        labels,
        groups,
        [1.0, 1e-2, 1e-4],
        target_recall=0.9,
        validation_fraction=0.25,
        folds=3,
        seed=0,
        sweep_recalls=(0.99, 0.8),
    )
    assert fit.validation_auc > 0.95
    assert set(fit.cv_auc_by_c) == {1.0, 1e-2, 1e-4}
    assert fit.best_c == max(fit.cv_auc_by_c, key=fit.cv_auc_by_c.get)
    assert fit.validation_recall == pytest.approx(0.9, abs=0.03)  # within one row of the target
    assert fit.thresholds_by_recall[0.99] <= fit.threshold <= fit.thresholds_by_recall[0.8]
    # the folded weights reproduce the pipeline's probabilities on raw features
    logits = features @ fit.weight + fit.bias
    flagged = 1 / (1 + np.exp(-logits)) >= fit.threshold
    assert flagged[labels == 1].mean() > 0.85
    assert abs(fit.weight[0]) > 5 * np.abs(fit.weight[1:]).max()


def test_validation_and_training_problems_do_not_overlap():
    features, labels, groups = _synthetic()
    fit = fit_head(features, labels, groups, [1.0], 0.9, 0.25, 3, seed=1)
    assert fit.train_rows + fit.validation_rows == len(labels)
    assert fit.validation_rows % 20 == 0  # whole problems only


def test_single_class_is_refused():
    features, _, groups = _synthetic()
    with pytest.raises(InputError, match="only one class"):
        fit_head(features, np.zeros(len(features), dtype=int), groups, [1.0], 0.9, 0.25, 3, seed=0)


def test_the_grid_chooses_the_column_set_and_weight_with_the_signal():
    features, labels, groups = _synthetic()
    sets = {"noise": (1, 2, 3), "signal": (0, 4)}
    fit = fit_head(features, labels, groups, [1.0, 1e-2], 0.9, 0.25, 3, 0, (), sets, (1.0, 10.0))
    assert fit.column_set == "signal" and fit.weight.shape == (2,)
    assert set(fit.cv_auc_by_candidate) == {"noise w=1", "noise w=10", "signal w=1", "signal w=10"}
    assert fit.cv_auc_by_candidate["signal w=1"] > fit.cv_auc_by_candidate["noise w=1"] + 0.3
    best = max(fit.cv_auc_by_candidate, key=fit.cv_auc_by_candidate.get)
    assert best == f"signal w={fit.important_weight:g}"
    probabilities = 1 / (1 + np.exp(-(features[:, [0, 4]] @ fit.weight + fit.bias)))
    assert (probabilities[labels == 1].mean() - probabilities[labels == 0].mean()) > 0.5
