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


def test_tau_is_the_quantile_of_important_scores_and_low_scores_are_important():
    scores = np.array([-9.0, -5.0, -1.0, 0.0, -3.0, -7.0])
    important = np.array([1, 1, 0, 0, 1, 1])  # important scores: -9, -7, -5, -3
    # numpy's linear quantile at 0.1 over 4 sorted values: -9 + 0.3 * (-7 - -9) = -8.4
    tau = calibrate_tau(scores, important, 0.1)
    assert tau == pytest.approx(-8.4)
    assert important_labels(scores, tau).tolist() == [1, 0, 0, 0, 0, 0]
    assert important_labels(scores, -3.0).tolist() == [1, 1, 0, 0, 1, 1]  # s <= tau is important
    with pytest.raises(InputError, match="no important mismatch"):
        calibrate_tau(scores, np.zeros(6), 0.1)
