"""The reference engine: token-identical to target-only greedy with the exact rule, and its counters."""

import pytest

from autojudge.decoding.batched import BatchedDecoder, Request
from autojudge.decoding.factory import draft_only, speculative, target_only
from autojudge.models.pair import ModelPair
from autojudge.models.prompts import encode_prompt
from autojudge.rules.acceptance import ExactMatch, TopK


def _prompts(task, tokenizer, split, limit=None):
    return [encode_prompt(tokenizer, task.build_prompt(e)) for e in task.load_split(split, limit)]


@pytest.mark.parametrize("window", [1, 2, 5, 16])
def test_exact_rule_equals_target_greedy_on_random_models(tiny_random_pair, arith_task, window):
    prompts = _prompts(arith_task, tiny_random_pair.tokenizer, "validation", limit=4)
    greedy = target_only(tiny_random_pair, max_new_tokens=40)
    decoder = speculative(tiny_random_pair, ExactMatch(), window, max_new_tokens=40)
    for prompt in prompts:
        expected, result = greedy.generate(prompt), decoder.generate(prompt)
        assert result.tokens == expected.tokens
        assert result.stats.tokens == len(result.tokens) <= 40
        assert result.stats.target_passes <= expected.stats.target_passes


def test_identical_draft_is_always_accepted_with_bonus_tokens(tiny_random_pair, arith_task):
    same = ModelPair(
        "same",
        tiny_random_pair.target,
        tiny_random_pair.target,
        tiny_random_pair.tokenizer,
        tiny_random_pair.target_path,
        tiny_random_pair.target_path,
    )
    prompt = _prompts(arith_task, same.tokenizer, "validation", limit=1)[0]
    result = speculative(same, ExactMatch(), window=4, max_new_tokens=40).generate(prompt)
    if not result.finished:
        # the prompt's pass (1 token), 7 cycles of 4 drafts + 1 bonus, a last cycle of 3 drafts + 1 bonus
        assert result.stats.target_passes == 9
        assert result.stats.mat == pytest.approx(40 / 9)
    assert result.stats.accepted_mismatches == 0


def test_accepting_every_mismatch_takes_whole_windows(tiny_random_pair, arith_task):
    prompt = _prompts(arith_task, tiny_random_pair.tokenizer, "validation", limit=1)[0]
    result = speculative(tiny_random_pair, TopK(10_000), window=4, max_new_tokens=40).generate(prompt)
    # the first token is the prompt pass's own; the first window is then the draft's own text
    draft_alone = draft_only(tiny_random_pair, 40).generate(prompt + result.tokens[:1])
    assert result.tokens[1:5] == draft_alone.tokens[:4]
    assert result.stats.accepted_mismatches > 0
    if not result.finished:
        assert result.stats.mat == pytest.approx(40 / 9)


def test_stops_at_end_of_sequence(tiny_random_pair, arith_task):
    eos = next(iter(tiny_random_pair.eos_token_ids))
    prompt = _prompts(arith_task, tiny_random_pair.tokenizer, "validation", limit=1)[0]
    greedy = target_only(tiny_random_pair, max_new_tokens=30).generate(prompt)
    first_token = greedy.tokens[0]
    pair = ModelPair(
        "eos",
        tiny_random_pair.draft,
        tiny_random_pair.target,
        tiny_random_pair.tokenizer,
        tiny_random_pair.draft_path,
        tiny_random_pair.target_path,
    )
    decoder = speculative(pair, ExactMatch(), window=3, max_new_tokens=30)
    decoder.decoder.eos_ids = {first_token, eos}  # the one-row batched engine it decodes with
    result = decoder.generate(prompt)
    assert result.tokens == [first_token]
    assert result.finished


def _assert_lossless(pair, items, window: int, max_new_tokens: int) -> None:
    """Exact-rule SD at ``window`` emits each item's target-greedy response, cut at ``max_new_tokens``.

    On the toy pair's splits the engine is the batched one the pipeline's stages decode with
    (tests/decoding/test_batched.py checks it against the one-sequence engine token for token)."""
    decoder = BatchedDecoder(
        pair.target, pair.draft, pair.vocab_size, pair.eos_token_ids, window, max_new_tokens
    )
    generations = decoder.generate([Request(prompt, ExactMatch()) for _, prompt, _ in items])
    mismatched = [
        example_id
        for (example_id, _, expected), generation in zip(items, generations, strict=True)
        if generation.tokens != expected[:max_new_tokens]
    ]
    assert not mismatched, (
        f"W={window}, cap {max_new_tokens}: {len(mismatched)} problems differ from target greedy: {mismatched[:5]}"
    )


@pytest.mark.slow
def test_exact_sd_is_lossless_on_the_whole_toy_test_split(toy_pair, toy_target_greedy, params):
    """At the pipeline's window, exact-rule SD reproduces the target's greedy output token for token."""
    reference = toy_target_greedy
    _assert_lossless(toy_pair, reference.items, params.decoding.window, reference.max_new_tokens)


@pytest.mark.slow
@pytest.mark.parametrize("window", [1, 4, 8, 16])
def test_exact_sd_is_lossless_at_every_window_until_end_of_sequence(toy_pair, toy_target_greedy, window):
    """Other windows on the first 40 test problems, every one of which ends in the end-of-sequence token."""
    reference = toy_target_greedy
    items = reference.items[:40]
    assert all(len(expected) < reference.max_new_tokens for _, _, expected in items)  # the EOS path
    _assert_lossless(toy_pair, items, window, reference.max_new_tokens)


@pytest.mark.slow
@pytest.mark.parametrize("window", [1, 4, 8, 16, 32])
def test_exact_sd_is_lossless_at_every_window_when_the_length_cap_stops_it(
    toy_pair, toy_target_greedy, window
):
    """A cap shorter than every response: each stops at the cap, inside or at the end of a window."""
    reference = toy_target_greedy
    items = reference.items[:20]
    cap = 23  # not a multiple of any window but 1: the cap falls inside a verification cycle
    assert all(len(expected) > cap for _, _, expected in items)
    _assert_lossless(toy_pair, items, window, cap)
