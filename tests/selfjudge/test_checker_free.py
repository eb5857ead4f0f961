"""Checker-free SelfJudge on the toy pair: no answers, no AutoJudge labels; tau set or from a mined subset."""

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from autojudge.engines.hf import HFEngine
from autojudge.features.store import read_features
from autojudge.mining.search import MiningProblem
from autojudge.models.teacher_forced import DraftPredictor
from autojudge.selfjudge.backends import PackedScorer
from autojudge.selfjudge.checker_free import relabel_responses, response_tau, write_response_features
from autojudge.selfjudge.labels import calibrate_tau
from autojudge.selfjudge.relabel import mined_scores, summary

TAU = -5.0
# open-ended prompts: there is no answer to check
PROMPTS = ["Tom has 3 apples and buys 4 more.", "A train leaves at noon and", "Write about 12 boxes of pens."]


@pytest.fixture(scope="module")
def settings(params):
    return params.model_copy(
        update={
            "selfjudge": params.selfjudge.model_copy(
                update={"n_next": 20, "tau": TAU, "calibration_problems": 1}
            ),
            "mining": params.mining.model_copy(update={"max_response_tokens": 48}),
            "features": params.features.model_copy(update={"batch_size": 4}),
        }
    )


@pytest.fixture(scope="module")
def backends(toy_pair):
    engine = HFEngine(toy_pair.target, toy_pair.pad_token_id, toy_pair.eos_token_ids, batch_size=3)
    return engine, PackedScorer(toy_pair.target, toy_pair.pad_token_id, 8)


@pytest.fixture(scope="module")
def problems(toy_pair):
    return [MiningProblem(f"p{i}", toy_pair.tokenizer.encode(text)) for i, text in enumerate(PROMPTS)]


@pytest.fixture(scope="module")
def relabeled(settings, toy_pair, problems, backends):
    return relabel_responses(settings, toy_pair, problems, *backends, (TAU, "set in params"))


def test_every_draft_mismatch_of_the_greedy_responses_is_labelled_by_its_score(toy_pair, problems, relabeled):
    result, rows = relabeled
    prompts = [p.prompt_ids for p in problems]
    greedy = HFEngine(toy_pair.target, toy_pair.pad_token_id, toy_pair.eos_token_ids).continue_prefixes(
        prompts, [48] * len(prompts)
    )
    ids = [p.id for p in problems]
    for problem_id, of_problem in _by_problem(rows).items():
        assert all(row["response_ids"] == greedy[ids.index(problem_id)] for row in of_problem)
    predicted = DraftPredictor(toy_pair.draft, toy_pair.vocab_size, toy_pair.pad_token_id).predict(
        prompts, greedy
    )
    expected = [
        (p.id, t)
        for p, r, d in zip(problems, greedy, predicted, strict=True)
        for t in range(len(r))
        if r[t] != d[t]
    ]
    assert list(zip(result.problem_ids, result.positions, strict=True)) == expected and expected
    assert result.autojudge_important is None
    assert result.important.tolist() == (result.scores <= TAU).astype(int).tolist()
    assert 0 < result.important.sum() < len(expected)  # the toy pair has both kinds at this tau
    for row in rows:
        assert row["response_ids"][row["position"]] == row["target_token"] != row["draft_token"]
    figures = summary(result)
    assert figures["mismatches"] == len(expected) and "agreement_with_autojudge" not in figures


def test_feature_rows_hold_the_draft_tokens_hidden_state_and_the_selfjudge_label(
    settings, toy_pair, relabeled, tmp_path
):
    result, rows = relabeled
    assert write_response_features(settings, toy_pair, tmp_path, result, rows) == len(rows)
    features, labels, problem_ids, spec = read_features(tmp_path)
    assert labels.tolist() == result.important.tolist() and problem_ids.tolist() == result.problem_ids
    table = pq.read_table(tmp_path / "features.parquet")
    assert np.allclose(table.column("score").to_numpy(), result.scores)
    assert "autojudge_important" not in table.column_names
    row = rows[-1]
    prefix = [*row["prompt_ids"], *row["response_ids"][: row["position"]], row["draft_token"]]
    with torch.inference_mode():
        state = toy_pair.target.base_model(input_ids=torch.tensor([prefix])).last_hidden_state[0, -1]
    assert spec.source == "target" and np.allclose(features[-1], state.numpy(), atol=1e-5)


def test_tau_is_set_or_calibrated_on_the_mined_mismatches_of_the_labelled_subset_only(
    settings, toy_pair, backends, relabeled
):
    _, rows = relabeled
    mined = [dict(row, important=i % 3 == 0) for i, row in enumerate(rows)]  # stand-in AutoJudge labels
    eos = toy_pair.eos_token_ids
    assert response_tau(settings, mined, *backends, eos) == (TAU, "set in params")
    calibrating = settings.model_copy(
        update={"selfjudge": settings.selfjudge.model_copy(update={"tau": None})}
    )
    tau, source = response_tau(calibrating, mined, *backends, eos)
    subset = [row for row in mined if row["problem_id"] == mined[0]["problem_id"]]  # calibration_problems: 1
    _, scores = mined_scores(calibrating, subset, *backends, eos)
    assert tau == calibrate_tau(scores, np.asarray([r["important"] for r in subset]), 0.9)
    assert "1 problems" in source
    changed = [dict(row, important=not row["important"]) if row not in subset else row for row in mined]
    assert response_tau(calibrating, changed, *backends, eos)[0] == tau  # labels outside the subset: unused


def _by_problem(rows: list[dict]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = {}
    for row in rows:
        grouped.setdefault(row["problem_id"], []).append(row)
    return grouped
