"""Batched verification on hand-made batches: the vLLM layout, the reference rules, mixed rules."""

import torch

from autojudge.decoding.rules import ExactMatch, TopK, Window
from autojudge.decoding.training_free import FuzzyRule
from autojudge.vllm_plugin.config import PluginConfig
from autojudge.vllm_plugin.verify import (
    PLACEHOLDER_TOKEN_ID,
    accept_mismatch,
    build_rule,
    greedy_verify,
)

V = 6


def _logits(argmaxes, second=None):
    """[N, V] logits whose argmax per row is ``argmaxes`` (and runner-up ``second``)."""
    logits = torch.zeros(len(argmaxes), V)
    for row, token in enumerate(argmaxes):
        logits[row, token] = 2.0
        if second is not None:
            logits[row, second[row]] = 1.0
    return logits


def test_exact_verification_keeps_the_agreeing_prefix_then_corrects():
    # request 0: 3 drafts, the second disagrees; request 1: 2 drafts, both agree -> bonus token
    draft = torch.tensor([1, 2, 3, 4, 5])
    target = _logits([1, 0, 3, 4, 5])
    out = greedy_verify(
        draft, torch.tensor([3, 5]), 3, target, torch.tensor([[9], [8]]), torch.zeros(5, dtype=torch.bool)
    )
    pad = PLACEHOLDER_TOKEN_ID
    assert out.tolist() == [[1, 0, pad, pad], [4, 5, 8, pad]]


def test_an_accepted_mismatch_lets_verification_go_on():
    draft = torch.tensor([1, 2, 3])
    target = _logits([1, 0, 0])
    accept = torch.tensor([False, True, False])
    out = greedy_verify(draft, torch.tensor([3]), 3, target, torch.tensor([[7]]), accept)
    assert out.tolist() == [[1, 2, 0, PLACEHOLDER_TOKEN_ID]]


def test_requests_without_drafts_get_their_bonus_token():
    out = greedy_verify(
        torch.tensor([1]),
        torch.tensor([0, 1]),
        1,
        _logits([1]),
        torch.tensor([5, 6]),
        torch.zeros(1, dtype=torch.bool),
    )
    assert out.tolist() == [[5, PLACEHOLDER_TOKEN_ID], [1, 6]]


def _window(draft, target, draft_logits=None):
    return Window(torch.tensor(draft), target, draft_logits, torch.zeros(len(draft), 2))


def test_rows_of_different_requests_use_their_own_rule():
    window = _window([3, 3, 3, 3], _logits([0, 0, 0, 0], second=[3, 3, 3, 3]))
    rules = [ExactMatch(), TopK(2)]
    mixed = accept_mismatch(rules, torch.tensor([0, 0, 1, 1]), window)
    assert mixed.tolist() == [False, False, True, True]
    assert accept_mismatch([TopK(2)], None, window).all()


def test_rules_are_the_reference_engines():
    assert isinstance(build_rule(PluginConfig("exact"), _no_head), ExactMatch)
    assert build_rule(PluginConfig("topk", top_k=3), _no_head).k == 3


def _no_head(location):
    raise AssertionError(f"no head should be loaded, asked for {location}")


def test_divergence_rule_accepts_close_distributions_and_stays_lossless_without_draft_logits():
    target = torch.log(torch.tensor([[0.5, 0.5, 0, 0, 0, 0], [0.5, 0.5, 0, 0, 0, 0]]) + 1e-12)
    draft = torch.log(torch.tensor([[0.5, 0.5, 0, 0, 0, 0], [0.0, 1.0, 0, 0, 0, 0]]) + 1e-12)
    rule = build_rule(PluginConfig("divergence", divergence="tv", threshold=0.25), _no_head)
    assert isinstance(rule, FuzzyRule)
    # TV = 0 for the first row, 0.5 for the second (hand-computed)
    assert rule.accept_mismatch(_window([1, 1], target, draft)).tolist() == [True, False]
    assert not accept_mismatch([rule], None, _window([1, 1], target)).any()


def test_fly_defers_per_request_in_the_flat_batch():
    # request 0 (rows 0-2): row 0 an unsure mismatch, rows 1-2 agree -> deferred, then the bonus token.
    # request 1 (rows 3-4): row 3 the same mismatch, but only one row after it -> corrected.
    draft = torch.tensor([2, 1, 3, 2, 4])
    target = _logits([1, 1, 3, 1, 4])
    target[[0, 3]] = torch.tensor([0.0, 0.1, 0.0, 0.0, -9.0, -9.0])  # four tokens about equally likely
    cu = torch.tensor([3, 5])
    window = Window(draft, target, None, torch.zeros(5, 2), cu_num_draft_tokens=cu)
    rule = build_rule(PluginConfig("fly", fly_window_size=2, fly_entropy_threshold=0.5), _no_head)
    accept = accept_mismatch([rule], None, window)
    assert accept.tolist() == [True, False, False, False, False]
    out = greedy_verify(draft, cu, 3, target, torch.tensor([[7], [8]]), accept)
    pad = PLACEHOLDER_TOKEN_ID
    assert out.tolist() == [[2, 1, 3, 7], [1, pad, pad, pad]]
