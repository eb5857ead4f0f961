"""Lossy rules never accept what vLLM forbids: sampling constraints hold at any threshold (real vLLM CPU build).

Every test decodes with rules that accept every mismatch they may (the judge at threshold 1.0,
and top-K over the whole vocabulary), and first shows, without the constraint, that those rules
do produce what the constraint forbids, so that each check can fail. Each runs greedy and sampled
(temperature 0.7, seeded): sampled requests are decided by the plugin's forced uniforms.
"""

from __future__ import annotations

import re

import pytest

from autojudge.models.prompts import encode_prompt

pytestmark = pytest.mark.slow

PROBLEMS = 4
MAX_TOKENS = 96


def _accept_all(vocab_size: int) -> list[dict]:
    return [{"autojudge_threshold": 1.0}, {"autojudge_rule": "topk", "autojudge_top_k": vocab_size}]


def _generate(llm, prompts, eos, extra_args=None, max_tokens=MAX_TOKENS, temperature=0.0, **constraints):
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    sampling = SamplingParams(
        temperature=temperature,
        seed=0 if temperature else None,
        max_tokens=max_tokens,
        stop_token_ids=sorted(eos),
        detokenize=False,
        extra_args=extra_args,
        **constraints,
    )
    outputs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], sampling, use_tqdm=False)
    return [list(o.outputs[0].token_ids) for o in outputs]


@pytest.fixture(scope="module", params=[0.0, 0.7], ids=["greedy", "sampled"])
def generate(request, judge_llm):
    """``_generate`` on the judge engine at one temperature (sampled requests seeded)."""

    def run(prompts, eos, extra_args=None, **settings):
        return _generate(judge_llm, prompts, eos, extra_args, temperature=request.param, **settings)

    run.sampled = request.param > 0
    return run


@pytest.fixture(scope="module")
def decoded(generate, toy_pair, arith_task):
    """Prompts, exact responses and accept-everything responses (no constraint)."""
    tokenizer = toy_pair.tokenizer
    prompts = [
        encode_prompt(tokenizer, arith_task.build_prompt(e)) for e in arith_task.load_split("test", PROBLEMS)
    ]
    eos = toy_pair.eos_token_ids
    exact = generate(prompts, eos, {"autojudge_rule": "exact"})
    lossy = [generate(prompts, eos, extra) for extra in _accept_all(len(tokenizer))]
    assert all(a != b for a, b in zip(exact, lossy[0], strict=True)), "the rule accepted no mismatch"
    return prompts, exact, lossy


def _bannable_lossy_tokens(tokenizer, exact, lossy) -> list[int]:
    """Tokens that accept-everything decoding emits and exact does not, which vLLM's ``bad_words`` can ban.

    vLLM bans the token sequence a bad word encodes to, and its leading-space variant when that has as
    many tokens; so a token qualifies when its text without leading spaces encodes to one token and the
    token is that one or its leading-space variant.
    """
    seen = {t for response in exact for t in response}
    candidates = {t for response in lossy for t in response} - seen

    def encode(text: str) -> list[int]:
        return tokenizer.encode(text, add_special_tokens=False)

    def qualifies(token: int) -> bool:
        word = tokenizer.decode([token]).lstrip()
        plain, spaced = encode(word), encode(" " + word)
        return len(plain) == 1 and token in (plain[0], spaced[0] if len(spaced) == 1 else None)

    bannable = [t for t in candidates if qualifies(t)]
    assert bannable, "accept-everything decoding emitted no bannable new token"
    return sorted(bannable)


@pytest.mark.parametrize("rule", [0, 1], ids=["judge-threshold-1", "topk-vocabulary"])
def test_allowed_token_ids_hold(generate, toy_pair, decoded, rule):
    prompts, exact, lossy = decoded
    allowed = sorted({t for response in exact for t in response} | toy_pair.eos_token_ids)
    assert any(set(r) - set(allowed) for r in lossy[rule]), "control: nothing to forbid"
    extra = _accept_all(len(toy_pair.tokenizer))[rule]
    outputs = generate(prompts, toy_pair.eos_token_ids, extra, allowed_token_ids=allowed)
    assert all(set(r) <= set(allowed) for r in outputs)
    assert outputs != exact or rule == 0  # the rule still accepts allowed mismatches


@pytest.mark.parametrize("rule", [0, 1], ids=["judge-threshold-1", "topk-vocabulary"])
def test_bad_words_hold(generate, toy_pair, decoded, rule):
    prompts, exact, lossy = decoded
    tokenizer = toy_pair.tokenizer
    # sampled exact responses use most of the toy vocabulary: ban any token accept-everything emitted
    banned = _bannable_lossy_tokens(tokenizer, [] if generate.sampled else exact, lossy[rule])
    extra = _accept_all(len(tokenizer))[rule]
    words = [tokenizer.decode([t]).lstrip() for t in banned]
    outputs = generate(prompts, toy_pair.eos_token_ids, extra, bad_words=words)
    assert not any(set(banned) & set(r) for r in outputs), [tokenizer.decode(r) for r in outputs]


def test_logit_bias_never_reaches_the_rule(generate, toy_pair, decoded):
    """vLLM 0.32 refuses logit_bias (and min_p) under speculative decoding; the plugin keeps that."""
    from vllm.exceptions import VLLMValidationError

    prompts, _, _ = decoded
    extra = _accept_all(len(toy_pair.tokenizer))[0]
    with pytest.raises(VLLMValidationError, match="logit_bias"):
        generate(prompts[:1], toy_pair.eos_token_ids, extra, logit_bias={5: -100.0})


@pytest.mark.parametrize("rule", [0, 1], ids=["judge-threshold-1", "topk-vocabulary"])
def test_min_tokens_suppresses_eos(generate, toy_pair, decoded, rule):
    prompts, _, lossy = decoded
    eos = toy_pair.eos_token_ids
    minimum = max(len(r) for r in lossy[rule]) + 16
    assert all(r[-1] in eos for r in lossy[rule] if len(r) < MAX_TOKENS), "control: responses end on EOS"
    extra = _accept_all(len(toy_pair.tokenizer))[rule]
    outputs = generate(prompts, eos, extra, max_tokens=minimum + 8, min_tokens=minimum)
    for response in outputs:
        assert len(response) >= minimum
        assert not eos & set(response[:minimum])


@pytest.mark.parametrize("rule", [0, 1], ids=["judge-threshold-1", "topk-vocabulary"])
def test_structured_outputs_hold(generate, toy_pair, decoded, rule):
    from vllm.sampling_params import StructuredOutputsParams

    prompts, _, _ = decoded
    tokenizer = toy_pair.tokenizer
    extra = _accept_all(len(tokenizer))[rule]
    pattern = r"[0-9]{1,3}( [-+*=] [0-9]{1,3}){0,4}\."
    choices = ["The final answer is 12.", "No answer."]
    for constraint, check in (
        (StructuredOutputsParams(regex=pattern), lambda text: re.fullmatch(pattern, text)),
        (StructuredOutputsParams(choice=choices), lambda text: text in choices),
    ):
        outputs = generate(prompts, toy_pair.eos_token_ids, extra, structured_outputs=constraint)
        texts = [tokenizer.decode(r, skip_special_tokens=True).strip() for r in outputs]
        assert all(check(text) for text in texts), texts


def test_placeholder_drafts_are_never_accepted(generate, toy_pair, decoded, params):
    """Near max_model_len vLLM skips the drafter and verifies zero-filled drafts: never accept them."""
    prompts, exact, _ = decoded
    limit = params.mining.vllm.max_model_len
    window = params.decoding.window
    # a long prompt: several solved problems, so that decoding runs into the last `window` positions
    long_prompt: list[int] = []
    for prompt, response in zip(prompts * 8, exact * 8, strict=True):
        if len(long_prompt) + len(prompt) + len(response) > limit - 3 * window:
            break
        long_prompt += prompt + response
    long_prompt += prompts[0]
    room = limit - len(long_prompt)
    assert room > window
    extra = _accept_all(len(toy_pair.tokenizer))[0]
    (output,) = generate([long_prompt], set(), extra, max_tokens=room, ignore_eos=True)
    assert len(long_prompt) + len(output) > limit - window  # steps with placeholder drafts ran
    assert toy_pair.pad_token_id == 0 and 0 not in output
