"""The batched reference engine: the one-sequence engine's tokens and counters, many rules in one batch."""

import pytest
import torch
from helpers import rule

from autojudge.decoding.batched import BatchedDecoder, Request
from autojudge.decoding.factory import draft_only, speculative, target_only
from autojudge.features.spec import FeatureSpec
from autojudge.heads.artifact import JudgeHead
from autojudge.models.prompts import encode_prompt
from autojudge.rules.acceptance import ExactMatch, JudgeRule, TopK
from autojudge.rules.fly import FlyRule


def _prompts(task, tokenizer, split, limit):
    return [encode_prompt(tokenizer, task.build_prompt(e)) for e in task.load_split(split, limit)]


def _counters(generation):
    stats = generation.stats
    return (
        stats.tokens,
        stats.target_passes,
        stats.draft_passes,
        stats.accepted_draft_tokens,
        stats.accepted_mismatches,
        generation.finished,
    )


def _batched(pair, window, max_new, batch_size, role="target", draft=True):
    model = pair.draft if role == "draft" else pair.target
    return BatchedDecoder(
        model,
        pair.draft if draft else None,
        pair.vocab_size,
        pair.eos_token_ids,
        window,
        max_new,
        batch_size,
        role,
    )


def _judge(pair, source):
    """A judge head with fixed random weights on the pair's states (``both``: the draft's are read too)."""
    spec = FeatureSpec(source, pair.target.config.hidden_size, pair.draft.config.hidden_size)
    weight = torch.randn(spec.dimension, generator=torch.Generator().manual_seed(0)) / spec.dimension**0.5
    return JudgeRule(JudgeHead(weight, 0.0, 0.5, spec, pair.name, "arith", "h"))


def _both_engines(pair, prompts, rules, window, max_new, batch_size):
    """Every (rule, prompt) decoded by the batched engine and, one at a time, by the reference engine
    (rule None: the target alone)."""
    requests = [Request(p, rule) for rule in rules for p in prompts]
    batched = _batched(pair, window, max_new, batch_size).generate(requests)
    expected = [
        (
            target_only(pair, max_new) if r.rule is None else speculative(pair, r.rule, window, max_new)
        ).generate(r.prompt)
        for r in requests
    ]
    return batched, expected


@pytest.mark.parametrize("window", [1, 4])
def test_mixed_rules_in_small_batches_match_the_one_sequence_engine(tiny_random_pair, arith_task, window):
    """Rows of different rules (and the target alone) share batches of 3, so rows join, leave and the
    caches are compacted while others are mid-sequence; every row equals its own sequential decode."""
    pair, max_new = tiny_random_pair, 30
    prompts = _prompts(arith_task, pair.tokenizer, "validation", 4)
    rules = [
        ExactMatch(),
        TopK(3),
        rule("fsd-tv", 0.6, window),
        FlyRule(0.1, window_size=1),
        _judge(pair, "both"),
        None,
    ]
    batched, expected = _both_engines(pair, prompts, rules, window, max_new, batch_size=3)
    for generation, sequential in zip(batched, expected, strict=True):
        assert generation.tokens == sequential.tokens
        assert _counters(generation) == _counters(sequential)
    assert any(g.stats.accepted_mismatches for g in batched)  # the lossy rules accepted something


def test_the_draft_alone_counts_draft_passes(tiny_random_pair, arith_task):
    pair = tiny_random_pair
    prompts = _prompts(arith_task, pair.tokenizer, "validation", 3)
    batched = _batched(pair, 1, 20, batch_size=8, role="draft", draft=False).generate(
        [Request(p) for p in prompts]
    )
    for prompt, generation in zip(prompts, batched, strict=True):
        expected = draft_only(pair, 20).generate(prompt)
        assert generation.tokens == expected.tokens
        assert _counters(generation) == _counters(expected)
        assert generation.stats.target_passes == 0 < generation.stats.draft_passes


def test_rules_need_a_draft(tiny_random_pair):
    decoder = _batched(tiny_random_pair, 4, 10, batch_size=2, draft=False)
    with pytest.raises(ValueError, match="need a draft model"):
        decoder.generate([Request([1, 2, 3], ExactMatch())])


@pytest.mark.slow
def test_cross_check_on_the_toy_pair(toy_pair, arith_task, params):
    """The trained toy pair at the pipeline's window: the batched engine (128 rows) agrees with the
    one-sequence engine on every token and counter of 12 test problems for every kind of rule."""
    max_new, window = params.decoding.max_new_tokens, params.decoding.window
    prompts = _prompts(arith_task, toy_pair.tokenizer, "test", 12)
    rules = [
        ExactMatch(),
        TopK(4),
        rule("fsd-kl", 0.5, window),
        rule("kl-mask", 1.0, window),
        rule("fly", 0.3, window),
        _judge(toy_pair, "target"),
    ]
    batched, expected = _both_engines(toy_pair, prompts, rules, window, max_new, batch_size=128)
    identical = [
        g.tokens == s.tokens and _counters(g) == _counters(s) for g, s in zip(batched, expected, strict=True)
    ]
    assert sum(identical) == len(rules) * len(prompts)


def test_dropped_requests_stop_and_the_others_are_untouched(tiny_random_pair, arith_task):
    """``on_finished`` sees each finished request once; the requests it names are never decoded (still
    waiting) or stop (running), and every other request decodes exactly as without the hook."""
    pair = tiny_random_pair
    requests = [Request(p, ExactMatch()) for p in _prompts(arith_task, pair.tokenizer, "validation", 6)]
    plain = _batched(pair, 4, 20, batch_size=2).generate(requests)
    seen: list[int] = []

    def drop_the_last_three(finished):  # once: when the first requests finish
        first = not seen
        seen.extend(index for index, _ in finished)
        return [3, 4, 5] if first else []

    hooked = _batched(pair, 4, 20, batch_size=2).generate(requests, on_finished=drop_the_last_three)
    assert len(seen) == len(set(seen)) and not {4, 5} & set(seen)
    assert [g.tokens for g in hooked[:3]] == [g.tokens for g in plain[:3]]
    assert hooked[4].tokens == hooked[5].tokens == []  # never joined a batch
