"""The vLLM and HF engines give the same continuations, greedy or Gumbel-max sampled with one seed, hence
the same mined labels."""

import copy

import pytest

from autojudge.engines.hf import HFEngine
from autojudge.mining.search import ImportantTokenSearch, MiningProblem
from autojudge.models.prompts import encode_prompt
from autojudge.models.teacher_forced import DraftPredictor


def _problems(arith_task, tokenizer, count):
    return [
        MiningProblem(e.id, encode_prompt(tokenizer, arith_task.build_prompt(e)))
        for e in arith_task.load_split("train", count)
    ]


def _mine(engine, toy_pair, arith_task, problems, gumbel_seed=None):
    draft = DraftPredictor(
        toy_pair.draft, toy_pair.vocab_size, toy_pair.pad_token_id, batch_size=8, gumbel_seed=gumbel_seed
    )
    search = ImportantTokenSearch(
        arith_task, toy_pair.tokenizer, engine, draft, 192, toy_pair.eos_token_ids, 16
    )
    return {result.id: result for result in search.run(problems)}


@pytest.mark.slow
def test_vllm_and_hf_mine_the_same_labels(vllm_target_engine, toy_pair, arith_task):
    problems = _problems(arith_task, toy_pair.tokenizer, 16)
    hf = HFEngine(toy_pair.target, toy_pair.pad_token_id, toy_pair.eos_token_ids, batch_size=8)
    from_hf = _mine(hf, toy_pair, arith_task, problems)
    from_vllm = _mine(vllm_target_engine, toy_pair, arith_task, problems)
    assert from_hf.keys() == from_vllm.keys()
    mismatches = sum(len(r.mismatches) for r in from_hf.values())
    assert mismatches > 16  # the subset exercises the search
    for problem_id, result in from_hf.items():
        assert from_vllm[problem_id].initial_response_ids == result.initial_response_ids, problem_id
        assert from_vllm[problem_id].mismatches == result.mismatches, problem_id
        assert from_vllm[problem_id].response_ids == result.response_ids, problem_id


@pytest.mark.slow
def test_vllm_engine_continues_prefixes_like_target_greedy(vllm_target_engine, toy_target_greedy):
    prompts = [prompt for _, prompt, _ in toy_target_greedy.items[:20]]
    expected = [response for _, _, response in toy_target_greedy.items[:20]]
    assert vllm_target_engine.continue_prefixes(prompts, [192] * 20) == expected
    # a prefix already holding part of the response continues it; a zero cap returns nothing
    halves = [
        prompt + response[: len(response) // 2] for prompt, response in zip(prompts, expected, strict=True)
    ]
    continued = vllm_target_engine.continue_prefixes(halves, [192 - len(r) // 2 for r in expected])
    assert [r[: len(r) // 2] + c for r, c in zip(expected, continued, strict=True)] == expected
    assert vllm_target_engine.continue_prefixes(prompts[:2], [0, 0]) == [[], []]


@pytest.mark.slow
def test_vllm_and_hf_mine_the_same_labels_under_gumbel_max_sampling(vllm_target_engine, toy_pair, arith_task):
    """Appendix A's sampling mode: the same per-prefix noise in both engines, so the same samples and labels;
    and they are samples, not the greedy responses."""
    problems = _problems(arith_task, toy_pair.tokenizer, 8)
    hf = HFEngine(toy_pair.target, toy_pair.pad_token_id, toy_pair.eos_token_ids, batch_size=8, gumbel_seed=7)
    sampled_vllm = copy.copy(vllm_target_engine)
    sampled_vllm.gumbel_seed = 7
    from_hf = _mine(hf, toy_pair, arith_task, problems, gumbel_seed=7)
    from_vllm = _mine(sampled_vllm, toy_pair, arith_task, problems, gumbel_seed=7)
    greedy = _mine(vllm_target_engine, toy_pair, arith_task, problems)
    assert sum(len(r.mismatches) for r in from_hf.values()) > 8
    assert any(greedy[i].initial_response_ids != r.initial_response_ids for i, r in from_hf.items())
    for problem_id, result in from_hf.items():
        assert from_vllm[problem_id].initial_response_ids == result.initial_response_ids, problem_id
        assert from_vllm[problem_id].mismatches == result.mismatches, problem_id
