"""Per-request control through vLLM's OpenAI server on loopback (`served_target`: the README's CPU serving
command as printed, the plugin serving the toy comparison's recommended rule), and the lossy-accept counters
on its ``/metrics``."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest
from helpers import Served, post_completion

pytestmark = pytest.mark.slow

PROBLEMS = 4


EXACT = {"autojudge_rule": "exact"}


def _complete(
    served: Served, prompt: list[int], max_tokens: int, xargs: dict | None, seed: int | None = None
) -> tuple[int, dict]:
    """Greedy with the target's logprobs, or sampled at temperature 1 with ``seed``."""
    body = {
        "model": served.model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "logprobs": 1,
        "return_tokens_as_token_ids": True,
    }
    if seed is not None:
        body.update(temperature=1.0, seed=seed, logprobs=None)
    if xargs is not None:
        body["vllm_xargs"] = xargs
    return post_completion(served.url, body)


def _tokens(choice: dict) -> list[int]:
    return [int(token.removeprefix("token_id:")) for token in choice["logprobs"]["tokens"]]


COUNTER = re.compile(
    r'^autojudge_(lossy_accepted|verified_draft)_tokens_total\{rule="([^"]+)"\} (\S+)$', re.M
)


def _counters(served: Served) -> dict[tuple[str, str], float]:
    """The server's autojudge counters: (lossy_accepted | verified_draft, rule) -> value."""
    with urllib.request.urlopen(f"{served.url.removesuffix('/v1')}/metrics", timeout=30) as response:
        text = response.read().decode()
    return {(kind, rule): float(value) for kind, rule, value in COUNTER.findall(text)}


def _moved(served: Served, before: dict, kind: str, rule: str) -> float:
    return _counters(served).get((kind, rule), 0.0) - before.get((kind, rule), 0.0)


def test_a_request_picks_its_rule_and_sees_what_it_accepted(served_target, toy_target_greedy, toy_pair):
    """A request that names no rule is verified by the engine's (the page's recommendation, counted under its
    name); ``exact`` gives the target's greedy tokens; top-K over the whole vocabulary accepts beyond them."""
    vocabulary = len(toy_pair.tokenizer)
    started = _counters(served_target)
    for _, prompt, expected in toy_target_greedy.items[:PROBLEMS]:
        cap = toy_target_greedy.max_new_tokens
        before = _counters(served_target)
        status, plain = _complete(served_target, prompt, cap, None)
        assert status == 200, plain
        assert _moved(served_target, before, "verified_draft", served_target.rule) > 0
        status, exact = _complete(served_target, prompt, cap, EXACT)
        assert status == 200, exact
        choice = exact["choices"][0]
        assert _tokens(choice)[: len(expected)] == expected[: len(_tokens(choice))]
        status, lossy = _complete(
            served_target, prompt, cap, {"autojudge_rule": "topk", "autojudge_top_k": vocabulary}
        )
        assert status == 200, lossy
    assert _moved(served_target, started, "lossy_accepted", "exact") == 0
    assert _moved(served_target, started, "lossy_accepted", "topk") > 0


@pytest.mark.parametrize(
    ("xargs", "reason"),
    [
        ({"autojudge_rule": "judge"}, "rule 'judge' needs judge_head"),
        ({"autojudge_rule": "fsd-kl", "autojudge_threshold": 0.1}, "reads the drafter's logits"),
        (
            {"autojudge_rule": "target-entropy", "autojudge_threshold": -5},
            "needs a threshold in [0, inf], got -5",
        ),
        ({"autojudge_rule": "topk", "autojudge_top_k": 0}, "needs top_k >= 1, got 0"),
        (
            {"autojudge_rule": "fly", "autojudge_threshold": 0.3, "autojudge_fly_window_size": 99},
            "must be in [1,",
        ),
        ({"autojudge_threshold": "high"}, "bad value"),
        ({"autojudge_window": 4}, r"unknown keys ['window']"),
    ],
)
def test_a_rule_the_engine_cannot_serve_is_an_http_400(served_target, toy_target_greedy, xargs, reason):
    _, prompt, _ = toy_target_greedy.items[0]
    status, body = _complete(served_target, prompt, 8, xargs)
    assert status == 400, body
    assert reason in json.dumps(body).replace("\\'", "'").replace('\\"', '"'), body


def test_the_metrics_count_lossy_accepts_by_rule(served_target, toy_pair, arith_task, params):
    from autojudge.models.prompts import encode_prompt

    cap = params.decoding.max_new_tokens
    prompts = [
        encode_prompt(toy_pair.tokenizer, arith_task.build_prompt(e))
        for e in arith_task.load_split("test", 2)
    ]
    lossy = {"autojudge_rule": "topk", "autojudge_top_k": len(toy_pair.tokenizer)}
    for seed in (None, 3):  # greedy, then sampled
        before = _counters(served_target)
        for prompt in prompts:
            assert _complete(served_target, prompt, cap, EXACT, seed)[0] == 200
        assert _moved(served_target, before, "verified_draft", "exact") > 0
        assert _moved(served_target, before, "lossy_accepted", "exact") == 0
        assert _moved(served_target, before, "lossy_accepted", "topk") == 0

    before = _counters(served_target)  # greedy: tokens that are not the target's top-1
    for prompt in prompts:
        status, body = _complete(served_target, prompt, cap, lossy)
        assert status == 200, body
    assert _moved(served_target, before, "lossy_accepted", "topk") > 0
    assert _moved(served_target, before, "lossy_accepted", "topk") <= _moved(
        served_target, before, "verified_draft", "topk"
    )

    before = _counters(served_target)  # sampled: tokens accepted although u > p(x)
    for seed, prompt in enumerate(prompts):
        assert _complete(served_target, prompt, cap, lossy, seed)[0] == 200
    assert _moved(served_target, before, "lossy_accepted", "topk") > 0
    assert _moved(served_target, before, "lossy_accepted", "exact") == 0
