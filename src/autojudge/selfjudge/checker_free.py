"""Checker-free SelfJudge: every draft mismatch in the target's own greedy responses, no answer checked.

SelfJudge (section 4.1) needs no answer checker: the target answers the task's prompts greedily,
the draft's teacher-forced argmax marks the mismatches, and each is labelled by its preservation
score against tau. tau is set in params, or calibrated on a small labelled subset: AutoJudge's
mined mismatches of the first ``calibration_problems`` problems, scored the same way.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from autojudge.engines.base import GenerationEngine
from autojudge.errors import InputError
from autojudge.features.hidden_states import extract_features
from autojudge.features.spec import FeatureSpec
from autojudge.features.store import write_features
from autojudge.mining.dataset import problems_from_rows
from autojudge.mining.run import mining_problems
from autojudge.mining.search import MiningProblem
from autojudge.models.pair import ModelPair
from autojudge.models.runtime import predictor_from
from autojudge.params import Params
from autojudge.selfjudge.candidates import Candidate, from_responses
from autojudge.selfjudge.labels import important_labels
from autojudge.selfjudge.relabel import (
    Relabeled,
    calibrated_tau,
    first_problems,
    mined_scores,
    write_relabeled_features,
)
from autojudge.selfjudge.score import LogprobScorer, preservation_scores


def response_tau(
    params: Params,
    mined_rows: list[dict],
    engine: GenerationEngine,
    scorer: LogprobScorer,
    eos_token_ids: set[int],
) -> tuple[float, str]:
    """tau as set in params, else calibrated on the mined mismatches of the first calibration problems."""
    settings = params.selfjudge
    if settings.tau is not None:
        return settings.tau, "set in params"
    labelled = first_problems(mined_rows, settings.calibration_problems)
    if not labelled:
        raise InputError("selfjudge: no mined mismatches to calibrate tau on: set selfjudge.tau")
    _, scores = mined_scores(params, labelled, engine, scorer, eos_token_ids)
    return calibrated_tau(settings, labelled, scores)


def response_rows(
    problems: list[MiningProblem], responses: list[list[int]], candidates: list[Candidate], labels: np.ndarray
) -> list[dict]:
    """Mined-data-set rows of the candidates: the response holds the target's token at each position."""
    by_id = {
        problem.id: (problem.prompt_ids, response)
        for problem, response in zip(problems, responses, strict=True)
    }
    return [
        {
            "problem_id": candidate.problem_id,
            "position": candidate.position,
            "target_token": candidate.replacement.original,
            "draft_token": candidate.replacement.replacement,
            "important": bool(label),
            "prompt_ids": by_id[candidate.problem_id][0],
            "response_ids": by_id[candidate.problem_id][1],
        }
        for candidate, label in zip(candidates, labels, strict=True)
    ]


def relabel_responses(
    params: Params,
    pair: ModelPair,
    problems: list[MiningProblem],
    engine: GenerationEngine,
    scorer: LogprobScorer,
    tau: tuple[float, str],
) -> tuple[Relabeled, list[dict]]:
    """Greedy responses, their draft mismatches, scores and labels; and the rows to encode as features."""
    settings = params.selfjudge
    prompts = [problem.prompt_ids for problem in problems]
    responses = engine.continue_prefixes(prompts, [params.mining.max_response_tokens] * len(prompts))
    draft = predictor_from(pair, settings.batch_size)
    candidates = from_responses([p.id for p in problems], prompts, responses, draft, settings.n_next)
    if not candidates:
        raise InputError("selfjudge: the draft agrees with every token of the target's responses")
    scores = np.asarray(preservation_scores([c.replacement for c in candidates], scorer))
    labels = important_labels(scores, tau[0])
    relabeled = Relabeled(
        [c.problem_id for c in candidates], [c.position for c in candidates], scores, None, labels, *tau
    )
    return relabeled, response_rows(problems, responses, candidates, labels)


def write_response_features(
    params: Params, pair: ModelPair, out_dir: Path, relabeled: Relabeled, rows: list[dict]
) -> int:
    """Hidden states of every candidate (as the features stage encodes mined rows), labels and scores."""
    spec = FeatureSpec(params.features.source, pair.target.config.hidden_size, pair.draft.config.hidden_size)
    matrix, feature_rows = extract_features(
        pair.target, pair.draft, problems_from_rows(rows), spec, pair.pad_token_id, params.features.batch_size
    )
    write_features(out_dir, matrix, feature_rows, spec)
    return write_relabeled_features(out_dir, out_dir, relabeled)


def relabel_checker_free(
    params: Params,
    pair: ModelPair,
    mined_rows: list[dict],
    engine: GenerationEngine,
    scorer: LogprobScorer,
) -> tuple[Relabeled, list[dict]]:
    """tau, then the first ``selfjudge.problems`` (default: as many as mined) problems' mismatches, labelled."""
    tau = response_tau(params, mined_rows, engine, scorer, pair.eos_token_ids)
    problems = mining_problems(params, pair, params.selfjudge.problems)
    return relabel_responses(params, pair, problems, engine, scorer, tau)
