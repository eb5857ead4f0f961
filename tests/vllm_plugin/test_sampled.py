"""Sampled requests in the real vLLM CPU build: the exact rule's seeded tokens are vLLM's own whether vLLM or
the plugin decides the step (a mixed batch with lossy greedy requests makes the plugin decide), greedy rows
of a mixed batch are unchanged, and a lossy rule raises MAT at temperature 0.7, reproducibly.

Stock vLLM 0.32's CPU build cannot be the reference here: its ``expand_batch_to_tokens`` returns
uninitialised per-token temperatures, so its sampled speculative requests are not reproducible and
greedy requests sharing their batch get wrong tokens. The judge engine replaces that function
(``patches.patch_expand_batch_to_tokens``); its requests with rule exact are vLLM's own decision.
"""

from __future__ import annotations

import pytest
from helpers import mean_accepted

from autojudge.decoding.sampling import Sampling
from autojudge.models.prompts import encode_prompt
from autojudge.vllm_plugin.engine import decode

pytestmark = pytest.mark.slow

PROBLEMS = 12
MAX_TOKENS = 96
SAMPLED = [Sampling(0.7, seed=seed) for seed in range(PROBLEMS)]
ACCEPT_ALL = {"threshold": 1.0}


@pytest.fixture(scope="module")
def prompts(toy_pair, arith_task):
    examples = arith_task.load_split("test", PROBLEMS)
    return [encode_prompt(toy_pair.tokenizer, arith_task.build_prompt(e)) for e in examples]


def test_a_mixed_batch_keeps_the_exact_rules_sampled_tokens_and_the_greedy_rows(judge_llm, prompts, toy_pair):
    eos = toy_pair.eos_token_ids
    exact_alone = decode(judge_llm, prompts, MAX_TOKENS, eos, override={"rule": "exact"}, sampling=SAMPLED)
    greedy_alone = decode(judge_llm, prompts, MAX_TOKENS, eos, override=ACCEPT_ALL)
    mixed = decode(
        judge_llm,
        prompts + prompts,
        MAX_TOKENS,
        eos,
        override=[{"rule": "exact"}] * PROBLEMS + [ACCEPT_ALL] * PROBLEMS,
        sampling=SAMPLED + [None] * PROBLEMS,
    )
    sampled, greedy = mixed[:PROBLEMS], mixed[PROBLEMS:]
    assert [r.tokens for r in sampled] == [r.tokens for r in exact_alone]
    assert [r.tokens for r in greedy] == [r.tokens for r in greedy_alone]
    assert len({tuple(r.tokens) for r in sampled}) == PROBLEMS
    assert mean_accepted(greedy) > mean_accepted(
        sampled
    )  # the greedy rows' rule accepted mismatches meanwhile


def test_a_lossy_rule_raises_mat_at_temperature_0_7_reproducibly(judge_llm, prompts, toy_pair):
    eos = toy_pair.eos_token_ids
    exact = decode(judge_llm, prompts, MAX_TOKENS, eos, override={"rule": "exact"}, sampling=SAMPLED)
    lossy = decode(judge_llm, prompts, MAX_TOKENS, eos, override=ACCEPT_ALL, sampling=SAMPLED)
    assert mean_accepted(lossy) > 1.2 * mean_accepted(exact)
    again = decode(judge_llm, prompts[:4], MAX_TOKENS, eos, override=ACCEPT_ALL, sampling=SAMPLED[:4])
    assert [r.tokens for r in again] == [r.tokens for r in lossy[:4]]
