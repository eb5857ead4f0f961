"""Batched verification on hand-made batches: the vLLM layout, the reference rules, mixed rules."""

import pytest
import torch
from helpers import rule

from autojudge.errors import InputError
from autojudge.rules.acceptance import ExactMatch, TopK, Window
from autojudge.rules.training_free import FuzzyRule
from autojudge.rules.verification import PLACEHOLDER_TOKEN_ID, accepted_rows, greedy_verify

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
    accepted = draft == target.argmax(dim=-1)
    out = greedy_verify(draft, torch.tensor([3, 5]), 3, target, torch.tensor([[9], [8]]), accepted)
    pad = PLACEHOLDER_TOKEN_ID
    assert out.tolist() == [[1, 0, pad, pad], [4, 5, 8, pad]]


def test_an_accepted_mismatch_lets_verification_go_on():
    draft = torch.tensor([1, 2, 3])
    target = _logits([1, 0, 0])
    accepted = torch.tensor([True, True, False])  # row 1 a mismatch the rule accepted
    out = greedy_verify(draft, torch.tensor([3]), 3, target, torch.tensor([[7]]), accepted)
    assert out.tolist() == [[1, 2, 0, PLACEHOLDER_TOKEN_ID]]


def test_requests_without_drafts_get_their_bonus_token():
    out = greedy_verify(
        torch.tensor([1]),
        torch.tensor([0, 1]),
        1,
        _logits([1]),
        torch.tensor([5, 6]),
        torch.ones(1, dtype=torch.bool),
    )
    assert out.tolist() == [[5, PLACEHOLDER_TOKEN_ID], [1, 6]]


def _window(draft, target, draft_logits=None):
    return Window(torch.tensor(draft), target, draft_logits, torch.zeros(len(draft), 2))


ALL = torch.ones(4, dtype=torch.bool)


def test_rows_of_different_requests_use_their_own_rule():
    window = _window([3, 3, 3, 3], _logits([0, 0, 0, 0], second=[3, 3, 3, 3]))
    rules = [ExactMatch(), TopK(2)]
    mixed = accepted_rows(rules, torch.tensor([0, 0, 1, 1]), window, ALL)
    assert mixed.tolist() == [False, False, True, True]
    assert accepted_rows([TopK(2)], None, window, ALL).all()
    lossless_here = torch.tensor([True, False, True, False])  # e.g. placeholders, forbidden tokens
    assert accepted_rows([TopK(2)], None, window, lossless_here).tolist() == [True, False, True, False]


def test_divergence_rule_accepts_close_distributions_and_refuses_drafts_without_draft_logits():
    """Without the drafter's logits a rule that reads them refuses the window (never a silent lossless
    decision); where no row may be decided (placeholders only), the native decision stands."""
    target = torch.log(torch.tensor([[0.5, 0.5, 0, 0, 0, 0], [0.5, 0.5, 0, 0, 0, 0]]) + 1e-12)
    draft = torch.log(torch.tensor([[0.5, 0.5, 0, 0, 0, 0], [0.0, 1.0, 0, 0, 0, 0]]) + 1e-12)
    fsd = rule("fsd-tv", 0.25)
    assert isinstance(fsd, FuzzyRule)
    # TV = 0 for the first row, 0.5 for the second (hand-computed); draft token 1 is not the argmax (0)
    assert fsd.accept_mismatch(_window([1, 1], target, draft)).tolist() == [True, False]
    with pytest.raises(InputError, match=r"rule fsd-tv.* reads the drafter's logits"):
        accepted_rows([fsd], None, _window([1, 1], target), torch.ones(2, dtype=torch.bool))
    placeholders = torch.zeros(2, dtype=torch.bool)
    assert not accepted_rows([fsd], None, _window([1, 1], target), placeholders).any()


def test_fsd_as_published_decides_matches_too_but_only_where_it_may():
    """A match with TV 0.5 >= T is rejected by FSD as published; where the rule may not decide (no
    drafter logits for the row), the native decision (accept the match) stands."""
    target = torch.log(torch.tensor([[0.6, 0.4, 0, 0, 0, 0]] * 2) + 1e-12)
    draft = torch.log(torch.tensor([[0.1, 0.9, 0, 0, 0, 0], [0.6, 0.4, 0, 0, 0, 0]]) + 1e-12)
    window = _window([0, 0], target, draft)  # both drafts match the target's argmax 0
    published = rule("fsd-tv-published", 0.25)
    assert accepted_rows([published], None, window, torch.ones(2, dtype=torch.bool)).tolist() == [False, True]
    assert accepted_rows([published], None, window, torch.tensor([False, True])).tolist() == [True, True]
    assert accepted_rows([rule("fsd-tv", 0.25)], None, window, torch.ones(2, dtype=torch.bool)).all()


def test_fly_defers_per_request_in_the_flat_batch():
    # request 0 (rows 0-2): row 0 an unsure mismatch, rows 1-2 agree -> deferred, then the bonus token.
    # request 1 (rows 3-4): row 3 the same mismatch, but only one row after it -> corrected.
    draft = torch.tensor([2, 1, 3, 2, 4])
    target = _logits([1, 1, 3, 1, 4])
    target[[0, 3]] = torch.tensor([0.0, 0.1, 0.0, 0.0, -9.0, -9.0])  # four tokens about equally likely
    cu = torch.tensor([3, 5])
    window = Window(draft, target, None, torch.zeros(5, 2), cu_num_draft_tokens=cu)
    fly = rule("fly", 0.5, window=3, fly_window_size=2)
    accepted = accepted_rows([fly], None, window, torch.ones(5, dtype=torch.bool))
    assert accepted.tolist() == [True, True, True, False, True]
    out = greedy_verify(draft, cu, 3, target, torch.tensor([[7], [8]]), accepted)
    pad = PLACEHOLDER_TOKEN_ID
    assert out.tolist() == [[2, 1, 3, 7], [1, pad, pad, pad]]
