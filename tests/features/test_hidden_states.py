import numpy as np
import pytest
import torch

from autojudge.features.groups import token_class_table
from autojudge.features.hidden_states import branch_mask, extract_features, plan_sequences
from autojudge.features.spec import GROUPS, FeatureSpec
from autojudge.heads.artifact import JudgeHead
from autojudge.mining.search import MinedProblem, Mismatch
from autojudge.rules.acceptance import JudgeRule, Window


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


def test_plan_reads_unimportant_from_the_response_and_branches_important_drafts_off_it():
    sequences, rows = plan_sequences([_problem()])
    (sequence,) = sequences
    assert sequence.tokens == [1, 20, 21, 30, 7, 32, 5, 34, 2, 9] and sequence.trunk == 9
    assert sequence.positions == [*range(9), 6]  # 9 where the target's 5 stood, seeing the 6 tokens before
    assert [(r.sequence, r.index, r.important) for r in rows] == [(0, 4, False), (0, 9, True)]
    assert all(sequence.tokens[r.index] == r.draft_token for r in rows)


def test_plan_branches_a_draft_token_wherever_the_response_kept_the_targets():
    # checker-free SelfJudge rows: the target's greedy response, an unimportant label at a target token
    problem = _problem()
    problem.response_ids[1] = 31
    (sequence,), rows = plan_sequences([problem])
    assert sequence.tokens[9:] == [7, 9] and sequence.positions[9:] == [4, 6]
    assert (rows[0].sequence, rows[0].index) == (0, 9) and not rows[0].important


def test_a_branch_sees_its_prefix_and_itself_only():
    (sequence,), _ = plan_sequences([_problem()])
    allowed = branch_mask(sequence, 11, torch.float32) == 0
    assert allowed[:9, :9].equal(torch.ones(9, 9, dtype=torch.bool).tril()) and not allowed[:9, 9:].any()
    assert allowed[9].nonzero().flatten().tolist() == [*range(6), 9]
    assert allowed[10].nonzero().flatten().tolist() == [10]  # padding sees itself only


def test_plan_rejects_a_response_that_does_not_hold_the_tested_token():
    problem = _problem()
    problem.response_ids[1] = 99
    with pytest.raises(ValueError, match="does not hold the tested token"):
        plan_sequences([problem])


@pytest.mark.parametrize("source", ["target", "draft", "both"])
def test_features_equal_a_direct_forward_pass_over_prefix_and_draft_token(tiny_random_pair, source):
    pair = tiny_random_pair
    spec = FeatureSpec(source, pair.target.config.hidden_size, pair.draft.config.hidden_size)
    shorter = MinedProblem("q", [1, 22], [33, 8, 2], [], "1", [Mismatch(1, 35, 8, important=False)])
    problems = {"p": _problem(), "q": shorter}  # padded together in one batch
    features, rows = extract_features(
        pair.target, pair.draft, list(problems.values()), spec, pair.pad_token_id, batch_size=2
    )
    assert features.shape == (3, spec.dimension) and features.dtype == np.float32
    for row, vector in zip(rows, features, strict=True):
        problem = problems[row.problem_id]
        prefix = [*problem.prompt_ids, *problem.response_ids[: row.position], row.draft_token]
        with torch.inference_mode():
            states = [
                m.base_model(input_ids=torch.tensor([prefix])).last_hidden_state[0, -1]
                for m in (pair.target, pair.draft)
            ]
        expected = {"target": states[0], "draft": states[1], "both": torch.cat(states)}[source]
        assert np.allclose(vector, expected.numpy(), atol=1e-5)


def test_the_features_stage_and_verification_give_a_head_the_same_rows(tiny_random_pair, tiny_tokenizer):
    """Training rows (teacher-forced, rule scores from the predicting state) and the rows a JudgeRule builds
    from a verification window (the step's states and logits) agree for every feature group."""
    pair = tiny_random_pair
    hidden = pair.target.config.hidden_size
    spec = FeatureSpec("target", hidden, pair.draft.config.hidden_size, GROUPS)
    table = token_class_table(tiny_tokenizer)
    features, rows = extract_features(
        pair.target, pair.draft, [_problem()], spec, pair.pad_token_id, 2, table, pair.vocab_size
    )
    head = JudgeHead(
        torch.randn(spec.dimension) / 10, 0.1, 0.5, spec, "tiny", "arith", "h", token_class=table
    )
    for row, vector in zip(rows, features, strict=True):
        problem = _problem()
        prefix = [*problem.prompt_ids, *problem.response_ids[: row.position], row.draft_token]
        with torch.inference_mode():
            states = pair.target.base_model(input_ids=torch.tensor([prefix])).last_hidden_state[0]
            logits = pair.target.get_output_embeddings()(states[-2:-1])[:, : pair.vocab_size]
        window = Window(torch.tensor([row.draft_token]), logits, None, states[-1:], None, states[-2:-1])
        served = JudgeRule(head).score(window)
        trained = head.probability(torch.from_numpy(vector).unsqueeze(0))
        assert torch.allclose(served, trained, atol=1e-5)
