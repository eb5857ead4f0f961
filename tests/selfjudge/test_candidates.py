"""SelfJudge on the toy pair: candidates from target responses alone (no answers), packed scores."""

import numpy as np
import pytest
import torch

from autojudge.engines.hf import HFEngine
from autojudge.models.teacher_forced import DraftPredictor
from autojudge.selfjudge.backends import PackedScorer, pack
from autojudge.selfjudge.candidates import from_mined_rows, from_responses
from autojudge.selfjudge.labels import important_labels
from autojudge.selfjudge.score import continuation_logprob, preservation_scores

N_NEXT = 20
# open-ended prompts: no answer exists, nothing checks one
PROMPTS = ["Tom has 3 apples and buys 4 more.", "A train leaves at noon and", "Write about 12 boxes of pens."]


@pytest.fixture(scope="module")
def responses(toy_pair):
    """(ids, prompts, the target's greedy responses) for the open-ended prompts."""
    prompts = [toy_pair.tokenizer.encode(text) for text in PROMPTS]
    engine = HFEngine(toy_pair.target, toy_pair.pad_token_id, toy_pair.eos_token_ids, batch_size=1)
    return (
        [f"p{i}" for i in range(len(prompts))],
        prompts,
        engine.continue_prefixes(prompts, [48] * len(prompts)),
    )


@pytest.fixture(scope="module")
def candidates(toy_pair, responses):
    draft = DraftPredictor(toy_pair.draft, toy_pair.vocab_size, toy_pair.pad_token_id)
    return from_responses(*responses, draft, N_NEXT)


def test_candidates_need_only_the_target_responses(toy_pair, responses, candidates):
    ids, prompts, texts = responses
    predictions = DraftPredictor(toy_pair.draft, toy_pair.vocab_size, toy_pair.pad_token_id).predict(
        prompts, texts
    )
    expected = {
        (i, p) for i, r, d in zip(ids, texts, predictions, strict=True) for p in range(len(r)) if r[p] != d[p]
    }
    assert {(c.problem_id, c.position) for c in candidates} == expected and expected
    for c in candidates:
        prompt, response = prompts[ids.index(c.problem_id)], texts[ids.index(c.problem_id)]
        assert c.replacement.prefix == prompt + response[: c.position]
        assert c.replacement.original == response[c.position] != c.replacement.replacement
        assert c.replacement.suffix == response[c.position + 1 : c.position + 1 + N_NEXT]
    scores = np.asarray(
        preservation_scores([c.replacement for c in candidates], PackedScorer(toy_pair.target, 0, 4))
    )
    assert np.isfinite(scores).all()
    assert important_labels(scores, -5.0).tolist() == (scores <= -5.0).astype(int).tolist()


def _single_passes(model, sequences, starts):
    with torch.inference_mode():
        return [
            continuation_logprob(model(torch.tensor([s])).logits[0], s, start)
            for s, start in zip(sequences, starts, strict=True)
        ]


@pytest.mark.parametrize("max_row_tokens", [1024, 64])  # 64: rows split, the context repeated
def test_packed_scores_equal_single_passes(toy_pair, candidates, max_row_tokens):
    chosen = candidates[:10]
    sequences = [s for c in chosen for s in c.replacement.sequences()]
    starts = [len(c.replacement.prefix) for c in chosen for _ in range(2)]
    rows = pack(sequences, starts, max_row_tokens)
    assert len(rows) < len(sequences)  # one response's mismatches share a row
    assert sorted(i for row in rows for i, _, _ in row.branches) == list(range(len(sequences)))
    packed = PackedScorer(toy_pair.target, toy_pair.pad_token_id, 3, max_row_tokens).continuation_logprobs(
        sequences, starts
    )
    assert packed == pytest.approx(_single_passes(toy_pair.target, sequences, starts), abs=1e-3)


def test_packing_keeps_unrelated_prefixes_apart_and_scores_an_empty_branch_zero(toy_pair):
    sequences = [[5, 6, 7, 8], [5, 6, 9, 10, 11], [5, 6, 7, 12], [5, 6]]
    starts = [2, 3, 3, 2]
    rows = pack(sequences, starts, 1024)
    assert [row.context for row in rows] == [[5, 6, 9], [5, 6, 7]]  # the longest prefix of each run
    assert [[i for i, _, _ in row.branches] for row in rows] == [[0, 1], [2, 3]]
    scores = PackedScorer(toy_pair.target, toy_pair.pad_token_id).continuation_logprobs(sequences, starts)
    assert scores[3] == 0.0
    assert scores == pytest.approx(_single_passes(toy_pair.target, sequences, starts), abs=1e-3)


def test_mined_rows_regenerate_the_targets_own_suffix(toy_pair, responses, candidates):
    ids, prompts, texts = responses
    rows = [
        {
            "problem_id": c.problem_id,
            "position": c.position,
            "target_token": c.replacement.original,
            "draft_token": c.replacement.replacement,
            "prompt_ids": prompts[ids.index(c.problem_id)],
            "response_ids": texts[ids.index(c.problem_id)],
        }
        for c in candidates[:6]
    ]
    engine = HFEngine(toy_pair.target, toy_pair.pad_token_id, toy_pair.eos_token_ids, batch_size=1)
    mined = from_mined_rows(rows, engine, N_NEXT, 48, toy_pair.eos_token_ids)
    assert [m.replacement for m in mined] == [c.replacement for c in candidates[:6]]
