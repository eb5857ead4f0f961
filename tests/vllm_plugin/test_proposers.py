"""The plugin on the proposers vLLM serves besides a draft model (real vLLM CPU build, toy target).

Both against target greedy (the reference engine's; stock exact speculative decoding equals it).
EAGLE: a head for the toy target (drawn at random and not trained: its drafts are poor, which verification
does not mind), whose engine's rule reads the drafter's logits, so that they are EAGLE's. N-gram: prompt
lookup, with no drafter logits, so rules that read them are refused at start. For each: exact is
token-identical to target greedy, a rule accepting every mismatch raises MAT and still
keeps a constraint (``allowed_token_ids``).
"""

from __future__ import annotations

import pytest
from helpers import mean_accepted

from autojudge.decoding.factory import target_only
from autojudge.errors import InputError
from autojudge.models.prompts import encode_prompt
from autojudge.vllm_plugin.engine import decode, speculative_llm

pytestmark = pytest.mark.slow

PROBLEMS = 6
MAX_TOKENS = 64
WINDOW = 4
NGRAM = {"prompt_lookup_min": 1, "prompt_lookup_max": 3}  # the toy prompts are short: look up short n-grams
ENGINE_RULE = {"eagle": {"rule": "fsd-tv", "threshold": 0.0}, "ngram": {"rule": "topk", "top_k": 1}}


@pytest.fixture(scope="module")
def eagle_head(repo, params, tmp_path_factory):
    import torch

    from autojudge.models.eagle import new_head, save_head
    from autojudge.models.pair import load_causal_lm

    target = load_causal_lm(repo / params.pair.target, torch.float32, role="target")
    out = tmp_path_factory.mktemp("eagle") / "head"
    save_head(new_head(target, seed=0), out)
    return out


def _llm(repo, params, method: str, draft, rule):
    """An engine of ``method``; n-gram engines in their own process: after an in-process one, vLLM 0.32
    CPU's kernel rebinding (``triton_utils/dispatcher.py``) fails on numba objects the n-gram proposer
    imports, so the next engine started in the process would not start. (This module shares no session
    engine: shutting an engine down tears down the distributed state that in-process engines share.)"""
    vllm = params.mining.vllm
    return speculative_llm(
        repo / params.pair.target, draft, WINDOW, rule, vllm.engine_kwargs, params.pair.dtype,
        vllm.max_model_len, in_process=vllm.in_process and method != "ngram", method=method,
        proposer_keys=NGRAM if method == "ngram" else None,
    )  # fmt: skip


@pytest.fixture(scope="module")
def prompts(toy_pair, arith_task):
    return [
        encode_prompt(toy_pair.tokenizer, arith_task.build_prompt(e))
        for e in arith_task.load_split("test", PROBLEMS)
    ]


def _allowed_only(llm, prompts, eos, allowed, extra_args) -> list[list[int]]:
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    sampling = SamplingParams(
        temperature=0.0, max_tokens=MAX_TOKENS, stop_token_ids=sorted(eos), detokenize=False,
        extra_args=extra_args, allowed_token_ids=allowed,
    )  # fmt: skip
    outputs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], sampling, use_tqdm=False)
    return [list(o.outputs[0].token_ids) for o in outputs]


@pytest.mark.parametrize("method", ["eagle", "ngram"])
def test_the_plugin_verifies_the_proposer(method, repo, params, toy_pair, prompts, eagle_head):
    """Exact requests batched with accept-everything ones (so that the plugin decides every step) emit
    target greedy's tokens, as stock vLLM's exact speculative decoding does."""
    draft = eagle_head if method == "eagle" else None
    eos, vocabulary = toy_pair.eos_token_ids, len(toy_pair.tokenizer)
    everything = {"rule": "topk", "top_k": vocabulary}
    judged = _llm(repo, params, method, draft, ENGINE_RULE[method])
    try:
        both = [{"rule": "exact"}] * PROBLEMS + [everything] * PROBLEMS
        results = decode(judged, prompts * 2, MAX_TOKENS, eos, override=both)
        exact, lossy = results[:PROBLEMS], results[PROBLEMS:]
        allowed = sorted({t for r in exact for t in r.tokens} | eos)
        constrained = _allowed_only(judged, prompts, eos, allowed, {"autojudge": everything})
        if method == "eagle":  # a rule reading the drafter's logits, on EAGLE's: TV < 1 accepts mismatches
            fsd = decode(judged, prompts, MAX_TOKENS, eos, override={"rule": "fsd-tv", "threshold": 1.0})
    finally:
        judged.llm_engine.engine_core.shutdown()
    greedy = [target_only(toy_pair, MAX_TOKENS).generate(prompt).tokens for prompt in prompts]
    assert [r.tokens for r in exact] == greedy
    assert mean_accepted(lossy) > mean_accepted(exact)
    assert any(set(r.tokens) - set(allowed) for r in lossy), "control: nothing to forbid"
    assert all(set(r) <= set(allowed) for r in constrained)
    if method == "eagle":
        assert mean_accepted(fsd) > mean_accepted(exact)


def test_rules_reading_drafter_logits_are_refused_on_ngram_at_start(repo, params):
    with pytest.raises(InputError, match="reads the drafter's logits, and the ngram proposer has none"):
        _llm(repo, params, "ngram", None, {"rule": "kl-mask", "threshold": 0.5})
