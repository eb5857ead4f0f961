"""The semantic preservation score, pinned by hand on a bigram distribution, and SelfJudge's labels."""

import math

import numpy as np
import pytest
import torch

from autojudge.errors import InputError
from autojudge.selfjudge.labels import calibrate_tau, important_labels
from autojudge.selfjudge.score import Replacement, continuation_logprob, preservation_scores

# next-token distribution given the current token (a bigram "target")
BIGRAM = torch.tensor([[0.3, 0.5, 0.2], [0.6, 0.2, 0.2], [0.3, 0.3, 0.4]])


class BigramScorer:
    """Logits of every position from the bigram table, scored with the library's own summation."""

    def continuation_logprobs(self, sequences, starts):
        return [
            continuation_logprob(BIGRAM[s].log(), s, start)
            for s, start in zip(sequences, starts, strict=True)
        ]


def test_continuation_logprob_sums_from_start():
    tokens = [0, 1, 0, 2]
    # log P(1|0) + log P(0|1) + log P(2|0) from start 1; only the last from start 3
    assert continuation_logprob(BIGRAM[tokens].log(), tokens, 1) == pytest.approx(math.log(0.5 * 0.6 * 0.2))
    assert continuation_logprob(BIGRAM[tokens].log(), tokens, 3) == pytest.approx(math.log(0.2))
    with pytest.raises(ValueError, match="start"):
        continuation_logprob(BIGRAM[tokens].log(), tokens, 0)


def test_score_is_prefix_term_plus_suffix_term():
    # y = 1, z = 2 after prefix [0], suffix [0]:
    # [ln P(2|0) - ln P(1|0)] + [ln P(0|2) - ln P(0|1)] = ln(0.2/0.5) + ln(0.3/0.6)
    with_suffix = Replacement(prefix=[0], original=1, replacement=2, suffix=[0])
    without_suffix = Replacement(prefix=[0], original=1, replacement=2, suffix=[])
    same_token = Replacement(prefix=[0], original=1, replacement=1, suffix=[0, 2])
    scores = preservation_scores([with_suffix, without_suffix, same_token], BigramScorer())
    assert scores[0] == pytest.approx(math.log(0.2 / 0.5) + math.log(0.3 / 0.6))
    assert scores[1] == pytest.approx(math.log(0.2 / 0.5))
    assert scores[2] == pytest.approx(0.0)


def test_tau_labels_at_least_the_recall_of_autojudge_important_tokens_important():
    scores = np.array([-9.0, -5.0, -1.0, 0.0, -3.0, -7.0])
    important = np.array([1, 1, 0, 0, 1, 1])  # important scores: -9, -7, -5, -3
    assert calibrate_tau(scores, important, 0.5) == -7.0  # 2 of 4 at or below it
    assert calibrate_tau(scores, important, 0.6) == -5.0  # 3 of 4: the lowest with >= 60%
    tau = calibrate_tau(scores, important, 0.9)
    assert tau == -3.0 and important_labels(scores, tau).tolist() == [1, 1, 0, 0, 1, 1]  # s <= tau
    rng = np.random.default_rng(0)
    for _ in range(20):
        scores, important = rng.normal(size=50), rng.integers(0, 2, size=50)
        labels = important_labels(scores, calibrate_tau(scores, important, 0.9))
        assert labels[important == 1].mean() >= 0.9
    with pytest.raises(InputError, match="no important mismatch"):
        calibrate_tau(scores, np.zeros(50), 0.9)
    with pytest.raises(InputError, match="recall must be in"):
        calibrate_tau(scores, important, 0.0)
