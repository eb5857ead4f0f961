"""The plugin in the real vLLM CPU build on the toy pair: lossless rules and agreement with the reference engine.

Engines and the judge head come from this folder's conftest (two engines for the session).
"""

from __future__ import annotations

import pytest
from helpers import assert_served_as_measured, head_agreement_decodes, mean_accepted, reference_decode

from autojudge.models.prompts import encode_prompt
from autojudge.rules.fly import FlyRule
from autojudge.vllm_plugin.engine import decode

pytestmark = pytest.mark.slow

AGREEMENT_PROBLEMS = 100  # problems of the test split compared with the reference engine (vLLM verifies the
# same greedy drafts with the same head in the same cycles: both engines emit the first token from the
# prompt's pass alone; tolerances: helpers.assert_served_as_measured)
FLY_PROBLEMS = 50
LOSSLESS_PROBLEMS = 100  # of the test split: exact, the judge at 0 and vanilla SD against target greedy


def test_exact_and_judge_at_zero_equal_vanilla_sd_and_target_greedy(
    vanilla_llm, judge_llm, toy_target_greedy, toy_pair
):
    items = toy_target_greedy.items[:LOSSLESS_PROBLEMS]
    prompts = [prompt for _, prompt, _ in items]
    expected = [response for _, _, response in items]
    decoding = (toy_target_greedy.max_new_tokens, toy_pair.eos_token_ids)
    vanilla = decode(vanilla_llm, prompts, *decoding)
    exact = decode(judge_llm, prompts, *decoding, override={"rule": "exact"})
    zero = decode(judge_llm, prompts, *decoding, override={"threshold": 0.0})
    for name, results in (("vanilla SD", vanilla), ("exact", exact), ("judge at threshold 0", zero)):
        differing = [item[0] for item, r in zip(items, results, strict=True) if r.tokens != item[2]]
        assert not differing, f"{name}: {len(differing)} problems differ from target greedy: {differing[:5]}"
    # same decisions, same counters: the plugin's exact verification is vLLM's
    assert [(r.spec_steps, r.accepted_draft_tokens) for r in exact] == [
        (r.spec_steps, r.accepted_draft_tokens) for r in vanilla
    ]
    assert all(r.target_passes >= 1 for r in exact) and mean_accepted(exact) > 1.5
    assert sum(len(r.tokens) for r in exact) == sum(len(t) for t in expected)


def test_judge_at_the_head_threshold_agrees_with_the_reference_engine(
    judge_llm, toy_pair, arith_task, params, target_head_path
):
    _, examples, ours, exact, reference = head_agreement_decodes(
        judge_llm, target_head_path, toy_pair, arith_task, params, AGREEMENT_PROBLEMS
    )
    assert_served_as_measured("judge", ours, exact, reference, examples, arith_task, toy_pair.tokenizer)


def test_fly_agrees_with_the_reference_engine(judge_llm, toy_pair, arith_task, params):
    """FLy per request (vLLM upstream's keys) on a batch of requests: vLLM's flat rows, split by request."""
    settings = {"fly_window_size": 4, "threshold": 0.3, "fly_entropy_top_k": 3}
    examples = arith_task.load_split("test", FLY_PROBLEMS)
    prompts = [encode_prompt(toy_pair.tokenizer, arith_task.build_prompt(e)) for e in examples]
    max_new = params.decoding.max_new_tokens
    rule = FlyRule(settings["threshold"], settings["fly_window_size"], settings["fly_entropy_top_k"])
    reference = reference_decode(toy_pair, prompts, rule, params.decoding.window, max_new)
    ours = decode(judge_llm, prompts, max_new, toy_pair.eos_token_ids, override={"rule": "fly", **settings})
    exact = decode(judge_llm, prompts, max_new, toy_pair.eos_token_ids, override={"rule": "exact"})

    assert_served_as_measured("FLy", ours, exact, reference, examples, arith_task, toy_pair.tokenizer)


def test_the_engine_keeps_its_pinned_head_when_the_alias_moves(
    judge_llm, target_head_path, toy_target_greedy, toy_pair, register_candidate
):
    from autojudge.vllm_plugin.pinning import file_sha256

    pinned = judge_llm.llm_engine.vllm_config.additional_config["autojudge"]
    assert pinned["judge_head_sha256"] == file_sha256(target_head_path)
    assert file_sha256(pinned["judge_head"]) == pinned["judge_head_sha256"]
    prompts = [prompt for _, prompt, _ in toy_target_greedy.items[:16]]
    decoding = (toy_target_greedy.max_new_tokens, toy_pair.eos_token_ids)
    before = [r.tokens for r in decode(judge_llm, prompts, *decoding)]
    looser = [r.tokens for r in decode(judge_llm, prompts, *decoding, override={"threshold": 0.999})]
    assert looser != before  # control: the head registered next would decode differently
    register_candidate(target_head_path, threshold=0.999)  # alias "candidate" moves to it
    assert [r.tokens for r in decode(judge_llm, prompts, *decoding)] == before
