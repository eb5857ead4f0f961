"""Training-free acceptance rules on hand-made windows: which mismatches each one accepts."""

import pytest
import torch

from autojudge.decoding.rules import Window
from autojudge.decoding.training_free import (
    TRAINING_FREE,
    EntropyRule,
    FuzzyRule,
    KLMaskRule,
    training_free_rule,
)
from autojudge.errors import InputError


def window(target_probs: list[list[float]], draft_probs: list[list[float]]) -> Window:
    target = torch.tensor(target_probs).log()
    draft = torch.tensor(draft_probs).log()
    return Window(draft.argmax(-1), target, draft, torch.zeros(len(target_probs), 2))


# position 0: near tie, models close; 1: models far apart; 2: confident target, draft close
W = window(
    [[0.5, 0.45, 0.05], [0.9, 0.05, 0.05], [0.92, 0.04, 0.04]],
    [[0.45, 0.5, 0.05], [0.05, 0.9, 0.05], [0.85, 0.1, 0.05]],
)


def test_fsd_accepts_where_the_divergence_is_below_threshold():
    assert FuzzyRule(0.05, "js").accept_mismatch(W).tolist() == [True, False, True]
    assert FuzzyRule(0.01, "kl").accept_mismatch(W).tolist() == [True, False, False]  # KL(pos 2) ~ 0.026
    assert FuzzyRule(0.06, "tv").accept_mismatch(W).tolist() == [True, False, False]  # TV(pos 2) = 0.07


def test_kl_mask_falls_back_to_exact_verification_when_the_target_is_confident():
    assert KLMaskRule(0.05, confidence=0.9).accept_mismatch(W).tolist() == [True, False, False]
    assert KLMaskRule(0.05, confidence=0.95).accept_mismatch(W).tolist() == [True, False, True]


def test_entropy_rules_accept_uncertain_positions():
    assert EntropyRule(0.5, "target").accept_mismatch(W).tolist() == [True, False, False]
    assert EntropyRule(0.5, "draft").accept_mismatch(W).tolist() == [True, False, True]  # H(draft 2) ~ 0.52


def test_factory_names_and_errors():
    assert [training_free_rule(m, 0.1).name for m in TRAINING_FREE] == list(TRAINING_FREE)
    with pytest.raises(InputError, match="unknown divergence 'hellinger'"):
        training_free_rule("fsd-hellinger", 0.1)
    with pytest.raises(InputError, match="unknown training-free rule"):
        training_free_rule("random", 0.1)
    with pytest.raises(InputError, match="confidence"):
        KLMaskRule(0.1, confidence=0.0)
