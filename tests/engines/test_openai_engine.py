"""The openai engine against a real `vllm serve` (vLLM's OpenAI-compatible server) on loopback.

The server (session fixture ``served_target`` in tests/conftest.py) runs speculative decoding with the
plugin serving the README's recommended rule, which is lossy; the engine asks every request for the
plugin's ``exact`` rule, so its greedy continuations are the target's.
"""

from __future__ import annotations

import pytest
from helpers import free_port

from autojudge.engines.hf import HFEngine
from autojudge.engines.openai_engine import OpenAIEngine
from autojudge.errors import InputError
from autojudge.mining.search import ImportantTokenSearch, MiningProblem
from autojudge.models.prompts import encode_prompt
from autojudge.models.teacher_forced import DraftPredictor


@pytest.mark.slow
def test_served_target_continues_prefixes_like_target_greedy(served_target, toy_pair, toy_target_greedy):
    engine = OpenAIEngine(served_target.url, served_target.model, toy_pair.eos_token_ids, concurrency=8)
    prompts = [prompt for _, prompt, _ in toy_target_greedy.items[:16]]
    expected = [response for _, _, response in toy_target_greedy.items[:16]]
    assert engine.continue_prefixes(prompts, [toy_target_greedy.max_new_tokens] * 16) == expected
    halves = [p + r[: len(r) // 2] for p, r in zip(prompts, expected, strict=True)]
    continued = engine.continue_prefixes(halves, [len(r) - len(r) // 2 for r in expected])
    assert continued == [r[len(r) // 2 :] for r in expected]
    assert engine.continue_prefixes(prompts[:1], [0]) == [[]]


@pytest.mark.slow
def test_mining_through_the_server_gives_the_hf_labels(served_target, toy_pair, arith_task):
    problems = [
        MiningProblem(e.id, encode_prompt(toy_pair.tokenizer, arith_task.build_prompt(e)))
        for e in arith_task.load_split("train", 8)
    ]

    def mine(engine):
        draft = DraftPredictor(toy_pair.draft, toy_pair.vocab_size, toy_pair.pad_token_id, batch_size=8)
        search = ImportantTokenSearch(
            arith_task, toy_pair.tokenizer, engine, draft, 192, toy_pair.eos_token_ids, 8
        )
        return {r.id: (r.mismatches, r.response_ids) for r in search.run(problems)}

    served = mine(OpenAIEngine(served_target.url, served_target.model, toy_pair.eos_token_ids, concurrency=8))
    local = mine(HFEngine(toy_pair.target, toy_pair.pad_token_id, toy_pair.eos_token_ids, batch_size=8))
    assert served == local
    assert sum(len(mismatches) for mismatches, _ in served.values()) > 0


def test_unreachable_server_is_named():
    engine = OpenAIEngine(f"http://127.0.0.1:{free_port()}/v1", "target", {0}, concurrency=1)
    with pytest.raises(InputError, match=r"openai engine: request to http://127\.0\.0\.1:\d+/v1/completions"):
        engine.continue_prefixes([[1, 2, 3]], [4])
