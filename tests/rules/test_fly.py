"""FLy's decision on hand-computed cases: the top-k entropy gate and the deferred window, greedy and sampled."""

import math

import pytest
import torch
from helpers import rule

from autojudge.errors import InputError
from autojudge.rules.acceptance import Window
from autojudge.rules.config import RuleConfig, fly_window
from autojudge.rules.fly import FlyRule, fly_acceptance_probability, fly_deferrals, top_k_entropy
from autojudge.rules.verification import accepted_count

V = 5
UNSURE = [0.0, 0.0, 0.0, -9.0, -9.0]  # three tokens about equally likely: top-3 entropy ~ ln 3


def _rows(argmaxes, unsure=()):
    """[N, V] logits: row n's argmax is ``argmaxes[n]``; rows in ``unsure`` spread over tokens 0-2."""
    logits = torch.full((len(argmaxes), V), -9.0)
    for row, token in enumerate(argmaxes):
        if row in unsure:
            logits[row] = torch.tensor(UNSURE)
            logits[row, token] = 0.1
        else:
            logits[row, token] = 5.0
    return logits


def _deferrals(draft, logits, cu, window_size, threshold, top_k, native=None):
    window = Window(draft, logits, None, torch.zeros(len(draft), 2), cu_num_draft_tokens=cu, native=native)
    return fly_deferrals(window, window_size, threshold, top_k)


def test_top_k_entropy_uses_full_softmax_probabilities_of_the_top_k():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.2]]))
    expected = -(0.5 * math.log(0.5) + 0.3 * math.log(0.3))  # top 2, not renormalised
    assert top_k_entropy(logits, 2).item() == pytest.approx(expected, abs=1e-6)
    assert top_k_entropy(logits, 10).item() == pytest.approx(expected - 0.2 * math.log(0.2), abs=1e-6)


def test_a_mismatch_is_deferred_only_where_the_target_is_unsure_and_the_next_tokens_agree():
    draft = torch.tensor([2, 1, 3, 4, 0])
    target = _rows([1, 1, 3, 0, 0], unsure={0, 3})  # row 0: unsure mismatch, rows 1-2 agree

    def defer(window_size, threshold=0.5, logits=target):
        return _deferrals(draft, logits, None, window_size, threshold, 3).tolist()

    assert defer(2) == [True, False, False, False, False]
    assert defer(3) == [False] * 5  # row 3 disagrees within the window
    assert defer(1) == [True, False, False, True, False]  # row 3: row 4 agrees
    assert defer(2, threshold=1.2) == [False] * 5  # entropy ~1.1 < 1.2
    assert defer(2, logits=_rows([1, 1, 3, 0, 0])) == [False] * 5  # a confident target: no deferral
    assert defer(5) == [False] * 5  # no room for a window of 5 after any row


def test_the_window_never_looks_into_the_next_request_nor_accepts_forbidden_or_padded_drafts():
    draft = torch.tensor([1, 2, 0, 0, -1, 0])
    target = _rows([1, 0, 0, 0, 0, 0], unsure={1})
    cu = torch.tensor([2, 6])  # request 0: rows 0-1; request 1: rows 2-5
    assert not _deferrals(draft, target, cu, 2, 0.5, 3)[1]  # rows 2-3 agree, but are request 1's
    assert _deferrals(draft, target, None, 2, 0.5, 3)[1]  # as one request it would defer
    forbidden = target.clone()
    forbidden[1, 2] = -math.inf
    assert not _deferrals(draft, forbidden, None, 2, 0.5, 3)[1]
    assert not _deferrals(draft, target, cu, 0, 0.0, 3)[4]  # a padded draft is never accepted


def test_rule_settings_use_vllm_names_and_are_checked():
    fly = rule("fly", 0.3, window=8, fly_window_size=4, fly_entropy_top_k=2)
    assert isinstance(fly, FlyRule) and (fly.window_size, fly.entropy_top_k) == (4, 2)
    assert fly.describe() == "fly(H_top2>=0.3, window=4)"
    for bad in ({"window_size": 0}, {"entropy_top_k": 0}, {"entropy_threshold": -0.1}):
        with pytest.raises(InputError, match="fly_"):
            FlyRule(**{"entropy_threshold": 0.3, "window_size": 2, **bad})


@pytest.mark.parametrize(
    ("window_size", "k", "expected"), [(None, 8, 6), (None, 4, 3), (None, 2, 1), (7, 8, 7)]
)
def test_the_window_defaults_to_upstreams_min_6_k_minus_1(window_size, k, expected):
    assert fly_window(window_size, k) == expected
    assert rule("fly", 0.3, window=k, fly_window_size=window_size).window_size == expected


@pytest.mark.parametrize(
    ("window_size", "k", "message"),
    [
        (None, 1, "fly needs at least 2 speculative tokens, got 1"),
        (4, 4, r"fly_window_size must be in \[1, 3\] \(smaller than num_speculative_tokens 4\), got 4"),
        (9, 8, r"must be in \[1, 7\]"),
    ],
)
def test_upstreams_refusals(window_size, k, message):
    with pytest.raises(InputError, match=message):
        rule("fly", 0.3, window=k, fly_window_size=window_size)
    with pytest.raises(InputError, match="fly_window_size must be at least 1, got 0"):
        RuleConfig("fly", 0.3, fly_window_size=0)


def test_with_the_default_window_the_last_w_positions_are_never_deferred():
    """K = 4, so W = 3: only row 0 has three rows after it. An unsure mismatch at row 0 followed by three
    agreeing rows is deferred; at row 1, followed by two agreeing rows, it is corrected (W = 2 would defer)."""
    target = _rows([1, 1, 3, 4], unsure={0, 1})
    first, second = torch.tensor([2, 1, 3, 4]), torch.tensor([1, 2, 3, 4])
    fly = rule("fly", 0.5, window=4)
    assert fly.accept_mismatch(Window(first, target, None, torch.zeros(4, 2))).tolist() == [
        True,
        False,
        False,
        False,
    ]
    late = Window(second, target, None, torch.zeros(4, 2))
    assert not fly.accept_mismatch(late).any()
    assert accepted_count(fly, late) == (1, 0)
    assert rule("fly", 0.5, window=4, fly_window_size=2).accept_mismatch(late).tolist() == [
        False,
        True,
        False,
        False,
    ]


def test_sampled_requests_read_the_standard_test_instead_of_matches():
    """Under sampling, "natively accepted" is u <= p(x): a row whose draft is not the argmax but passed the
    test counts as agreeing, and a matching row that failed it is a rejection FLy may defer."""
    draft = torch.tensor([1, 2, 3, 4, 0])
    target = _rows([1, 1, 3, 0, 0], unsure={0, 1})
    passed = torch.tensor([False, True, True, False, False])  # row 0 failed although it matches
    assert _deferrals(draft, target, None, 2, 0.5, 3, native=passed).tolist() == [
        True,
        False,
        False,
        False,
        False,
    ]
    assert _deferrals(draft, target, None, 2, 0.5, 3).tolist() == [False] * 5  # greedy: row 1 mismatches


def test_the_acceptance_probability_is_the_chance_that_the_next_window_passes():
    draft = torch.tensor([2, 1, 3, 4])
    target = _rows([1, 1, 3, 4], unsure={0})
    window = Window(draft, target, None, torch.zeros(4, 2), native=torch.zeros(4, dtype=torch.bool))
    probs = torch.softmax(target, dim=-1)
    chance = fly_acceptance_probability(window, 2, 0.5, 3)
    assert chance[0].item() == pytest.approx((probs[1, 1] * probs[2, 3]).item(), rel=1e-5)
    assert chance[1:].tolist() == [0.0, 0.0, 0.0]  # certain rows fail the gate; the last 2 have no room
    greedy = fly_acceptance_probability(Window(draft, target, None, torch.zeros(4, 2)), 2, 0.5, 3)
    assert greedy.tolist() == [1.0, 0.0, 0.0, 0.0]  # greedy: the next two match
