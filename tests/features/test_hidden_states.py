import numpy as np
import pytest
import torch

from autojudge.features.hidden_states import extract_features, plan_sequences
from autojudge.features.spec import FeatureSpec
from autojudge.mining.search import MinedProblem, Mismatch


def _problem():
    # response after mining: the unimportant draft token 7 was kept at 1, the target's 5 kept at 3
    return MinedProblem(
        id="p",
        prompt_ids=[1, 20, 21],
        response_ids=[30, 7, 32, 5, 34, 2],
        initial_response_ids=[],
        answer="4",
        mismatches=[Mismatch(1, 31, 7, important=False), Mismatch(3, 5, 9, important=True)],
    )


def test_plan_reads_unimportant_from_the_response_and_encodes_important_drafts_apart():
    sequences, rows = plan_sequences([_problem()])
    assert sequences == [[1, 20, 21, 30, 7, 32, 5, 34, 2], [1, 20, 21, 30, 7, 32, 9]]
    assert [(r.sequence, r.index, r.important) for r in rows] == [(0, 4, False), (1, 6, True)]
    assert all(sequences[r.sequence][r.index] == r.draft_token for r in rows)


def test_plan_encodes_a_draft_token_apart_wherever_the_response_kept_the_targets():
    # checker-free SelfJudge rows: the target's greedy response, an unimportant label at a target token
    problem = _problem()
    problem.response_ids[1] = 31
    sequences, rows = plan_sequences([problem])
    assert sequences[1] == [1, 20, 21, 30, 7] and (rows[0].sequence, rows[0].index) == (1, 4)
    assert not rows[0].important


def test_plan_rejects_a_response_that_does_not_hold_the_tested_token():
    problem = _problem()
    problem.response_ids[1] = 99
    with pytest.raises(ValueError, match="does not hold the tested token"):
        plan_sequences([problem])


@pytest.mark.parametrize("source", ["target", "draft", "both"])
def test_features_equal_a_direct_forward_pass_over_prefix_and_draft_token(tiny_random_pair, source):
    pair = tiny_random_pair
    spec = FeatureSpec(source, pair.target.config.hidden_size, pair.draft.config.hidden_size)
    features, rows = extract_features(
        pair.target, pair.draft, [_problem()], spec, pair.pad_token_id, batch_size=2
    )
    assert features.shape == (2, spec.dimension) and features.dtype == np.float32
    for row, vector in zip(rows, features, strict=True):
        prefix = [1, 20, 21, *_problem().response_ids[: row.position], row.draft_token]
        with torch.inference_mode():
            states = [
                m.base_model(input_ids=torch.tensor([prefix])).last_hidden_state[0, -1]
                for m in (pair.target, pair.draft)
            ]
        expected = {"target": states[0], "draft": states[1], "both": torch.cat(states)}[source]
        assert np.allclose(vector, expected.numpy(), atol=1e-5)
