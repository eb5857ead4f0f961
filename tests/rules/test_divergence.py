"""Divergences and entropies pinned against values computed by hand on small distributions."""

import math

import pytest
import torch

from autojudge.rules.divergence import (
    DIVERGENCES,
    entropy,
    js_divergence,
    kl_divergence,
    top1_probability,
    tv_distance,
)

P = torch.tensor([0.5, 0.5, 0.0])  # target
Q = torch.tensor([0.25, 0.25, 0.5])  # draft


def logits(p: torch.Tensor) -> torch.Tensor:
    return p.log() + 3.0  # an arbitrary shift: logits, not log-probabilities


def test_kl_is_target_relative_to_draft():
    # KL(P||Q) = 0.5 ln(0.5/0.25) * 2 = ln 2; the zero of P contributes nothing
    assert float(kl_divergence(logits(P), logits(Q))) == pytest.approx(math.log(2), abs=1e-6)
    # KL(Q||P) is infinite (Q has mass where P has none)
    assert math.isinf(float(kl_divergence(logits(Q), logits(P))))


def test_js_uses_the_average_distribution():
    # M = (3/8, 3/8, 1/4); KL(P||M) = ln(4/3); KL(Q||M) = 0.5 ln(2/3) + 0.5 ln 2 = 0.5 ln(4/3)
    expected = 0.5 * math.log(4 / 3) + 0.5 * 0.5 * math.log(4 / 3)
    assert float(js_divergence(logits(P), logits(Q))) == pytest.approx(expected, abs=1e-6)
    assert float(js_divergence(logits(Q), logits(P))) == pytest.approx(expected, abs=1e-6)  # symmetric


def test_tv_is_half_the_l1_distance():
    # 0.5 * (0.25 + 0.25 + 0.5) = 0.5
    assert float(tv_distance(logits(P), logits(Q))) == pytest.approx(0.5, abs=1e-6)


def test_entropy_and_top1():
    assert float(entropy(logits(P))) == pytest.approx(math.log(2), abs=1e-6)
    assert float(entropy(logits(Q))) == pytest.approx(1.5 * math.log(2), abs=1e-6)  # 2*(1/4 ln4) + 1/2 ln2
    assert float(top1_probability(logits(Q))) == pytest.approx(0.5, abs=1e-6)


def test_batched_over_positions_and_zero_for_equal_distributions():
    target = torch.stack([logits(P), logits(Q), logits(Q)])
    draft = torch.stack([logits(Q), logits(Q), logits(P)])
    for name, divergence in DIVERGENCES.items():
        values = divergence(target, draft)
        assert values.shape == (3,), name
        assert float(values[1]) == pytest.approx(0.0, abs=1e-6), name
    assert entropy(target).shape == (3,)
