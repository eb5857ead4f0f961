"""Training-free acceptance rules on hand-made windows: which mismatches each one accepts."""

import pytest
import torch
from helpers import rule

from autojudge.decoding.batched import BatchedDecoder, Request
from autojudge.errors import InputError
from autojudge.models.prompts import encode_prompt
from autojudge.rules.acceptance import Window
from autojudge.rules.training_free import EntropyRule, FuzzyRule, KLMaskRule
from autojudge.rules.verification import accepted_count


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


def test_fsd_as_published_rejects_a_match_whose_divergence_is_too_large():
    # position 0: both models pick token 0 but TV = 0.3; position 1: a mismatch with TV = 0.05
    matched = window([[0.6, 0.3, 0.1], [0.5, 0.45, 0.05]], [[0.9, 0.05, 0.05], [0.45, 0.5, 0.05]])
    assert accepted_count(FuzzyRule(0.1, "tv"), matched) == (2, 1)  # match-or: the match stands
    published = rule("fsd-tv-published", 0.1)
    assert not published.keeps_matches
    assert accepted_count(published, matched) == (0, 0)
    assert accepted_count(rule("fsd-tv-published", 0.4), matched) == (2, 1)


def test_fsd_as_published_emits_the_match_or_tokens_with_more_target_passes(toy_pair, arith_task, params):
    """Greedy decoding: a rejected match is corrected to the target's argmax, the draft token itself."""
    prompts = [
        encode_prompt(toy_pair.tokenizer, arith_task.build_prompt(e))
        for e in arith_task.load_split("test", 8)
    ]
    rules = [rule("fsd-tv", 0.09), rule("fsd-tv-published", 0.09)]
    decoder = BatchedDecoder(
        toy_pair.target, toy_pair.draft, toy_pair.vocab_size, toy_pair.eos_token_ids, 32, 192, batch_size=16
    )
    generations = decoder.generate([Request(p, rule) for rule in rules for p in prompts])
    match_or, published = generations[: len(prompts)], generations[len(prompts) :]
    assert [g.tokens for g in published] == [g.tokens for g in match_or]
    passes = [
        (a.stats.target_passes, b.stats.target_passes) for a, b in zip(match_or, published, strict=True)
    ]
    assert all(mine <= theirs for mine, theirs in passes)
    assert sum(theirs for _, theirs in passes) > sum(mine for mine, _ in passes)


def test_kl_mask_falls_back_to_exact_verification_when_the_target_is_confident():
    assert KLMaskRule(0.05, confidence=0.9).accept_mismatch(W).tolist() == [True, False, False]
    assert KLMaskRule(0.05, confidence=0.95).accept_mismatch(W).tolist() == [True, False, True]


def test_entropy_rules_accept_uncertain_positions():
    assert EntropyRule(0.5, "target").accept_mismatch(W).tolist() == [True, False, False]
    assert EntropyRule(0.5, "draft").accept_mismatch(W).tolist() == [True, False, True]  # H(draft 2) ~ 0.52


def test_rule_classes_refuse_bad_settings():
    with pytest.raises(InputError, match="unknown divergence 'hellinger'"):
        FuzzyRule(0.1, "hellinger")
    with pytest.raises(InputError, match="confidence"):
        KLMaskRule(0.1, confidence=0.0)
