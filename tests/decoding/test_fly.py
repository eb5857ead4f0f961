"""FLy's greedy decision on hand-computed cases: the top-k entropy gate and the deferred window."""

import math

import pytest
import torch

from autojudge.decoding.factory import speculative
from autojudge.decoding.fly import FlyRule, fly_deferrals, top_k_entropy
from autojudge.decoding.rules import ExactMatch
from autojudge.decoding.training_free import training_free_rule
from autojudge.errors import InputError
from autojudge.models.prompts import encode_prompt

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


def test_top_k_entropy_uses_full_softmax_probabilities_of_the_top_k():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.2]]))
    expected = -(0.5 * math.log(0.5) + 0.3 * math.log(0.3))  # top 2, not renormalised
    assert top_k_entropy(logits, 2).item() == pytest.approx(expected, abs=1e-6)
    assert top_k_entropy(logits, 10).item() == pytest.approx(expected - 0.2 * math.log(0.2), abs=1e-6)


def test_a_mismatch_is_deferred_only_where_the_target_is_unsure_and_the_next_tokens_agree():
    draft = torch.tensor([2, 1, 3, 4, 0])
    target = _rows([1, 1, 3, 0, 0], unsure={0, 3})  # row 0: unsure mismatch, rows 1-2 agree

    def defer(window_size, threshold=0.5, logits=target):
        return fly_deferrals(draft, logits, None, window_size, threshold, 3).tolist()

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
    assert not fly_deferrals(draft, target, cu, 2, 0.5, 3)[1]  # rows 2-3 agree, but are request 1's
    assert fly_deferrals(draft, target, None, 2, 0.5, 3)[1]  # as one request it would defer
    forbidden = target.clone()
    forbidden[1, 2] = -math.inf
    assert not fly_deferrals(draft, forbidden, None, 2, 0.5, 3)[1]
    assert not fly_deferrals(draft, target, cu, 0, 0.0, 3)[4]  # a padded draft is never accepted


def test_rule_settings_use_vllm_names_and_are_checked():
    rule = training_free_rule("fly", 0.3, fly_window_size=4, fly_entropy_top_k=2)
    assert isinstance(rule, FlyRule) and (rule.window_size, rule.entropy_top_k) == (4, 2)
    assert rule.describe() == "fly(H_top2>=0.3, window=4)"
    for bad in ({"window_size": -1}, {"entropy_top_k": 0}, {"entropy_threshold": -0.1}):
        with pytest.raises(InputError, match="fly_"):
            FlyRule(**{"entropy_threshold": 0.3, **bad})


def test_in_the_reference_engine_a_window_no_draft_can_fill_is_exact_sd(tiny_random_pair, arith_task):
    prompts = [
        encode_prompt(tiny_random_pair.tokenizer, arith_task.build_prompt(e))
        for e in arith_task.load_split("test", 3)
    ]
    exact = speculative(tiny_random_pair, ExactMatch(), window=4, max_new_tokens=24)
    never = speculative(tiny_random_pair, FlyRule(0.0, window_size=4), window=4, max_new_tokens=24)
    loose = speculative(tiny_random_pair, FlyRule(0.0, window_size=0), window=4, max_new_tokens=24)
    for prompt in prompts:
        assert never.generate(prompt).tokens == exact.generate(prompt).tokens
        assert loose.generate(prompt).stats.accepted_mismatches > 0  # window 0, gate 0: every mismatch
