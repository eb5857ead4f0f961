"""Candidate grids at validation acceptance rates: thresholds that accept the asked share of mismatches."""

import math

import torch

from autojudge.evaluation.grids import Mismatches, rate_settings, rate_threshold, scores
from autojudge.rules.config import RuleConfig


def test_the_threshold_at_a_rate_accepts_that_share_of_the_scores():
    ordered = torch.tensor([0.1, 0.2, 0.3, 0.4, math.inf])  # inf: a masked row, never accepted
    assert rate_threshold(ordered, 0.5) == 0.25  # accepts 2 of the 4 finite ones
    assert rate_threshold(ordered, 1.0) == 0.4001  # just above the largest, to 4 digits
    assert sum(ordered < rate_threshold(ordered, 0.75)).item() == 3


def test_every_method_gets_one_candidate_per_rate_in_its_registry_range():
    probabilities = torch.tensor([0.1, 0.2, 0.5, 0.9999999])
    judge = rate_settings("judge", probabilities, [0.25, 0.5, 1.0], 8)
    assert [(s.threshold, s.rate) for s in judge] == [(0.15, 0.25), (0.35, 0.5), (1.0, 1.0)]
    for setting in judge:
        RuleConfig("judge", setting.threshold)  # in [0, 1]
    entropy = rate_settings("target-entropy", torch.tensor([-2.0, -1.0, -0.5]), [1 / 3, 1.0], 8)
    assert [s.threshold for s in entropy] == [1.5, 0.4999]  # accept iff entropy > t: the top third, then all
    ranks = rate_settings("topk", torch.tensor([2.0, 2.0, 3.0, 7.0]), [0.5, 0.75, 1.0], 8)
    assert [s.k for s in ranks] == [2, 3, 7]  # accept iff rank <= K
    assert len(rate_settings("topk", torch.tensor([2.0, 2.0, 2.0, 2.0]), [0.5, 1.0], 8)) == 1  # same K: once


def test_scores_order_mismatches_as_each_rule_accepts_them():
    target = torch.log(torch.tensor([[0.5, 0.3, 0.2], [0.98, 0.01, 0.01]]))
    draft = torch.log(torch.tensor([[0.3, 0.5, 0.2], [0.01, 0.98, 0.01]]))
    mismatches = Mismatches(torch.tensor([1, 1]), target, draft, [])
    assert scores("topk", mismatches, 0.9, 3, 8).tolist() == [2.0, 2.0]
    kl_mask = scores("kl-mask", mismatches, 0.9, 3, 8)
    assert math.isfinite(kl_mask[0]) and kl_mask[1] == math.inf  # top-1 p 0.98 > 0.9: never accepted
    tv = scores("fsd-tv", mismatches, 0.9, 3, 8)
    assert tv[0] == tv[0].clamp(0.19, 0.21) and tv[1] > 0.9
    assert (
        scores("target-entropy", mismatches, 0.9, 3, 8)[0]
        < scores("target-entropy", mismatches, 0.9, 3, 8)[1]
    )


def test_labelled_mismatches_are_read_teacher_forced_as_the_grids_read_theirs(toy_pair, arith_task):
    """The grids' own mismatches, given back as labelled problems, come back with the same tokens and logits:
    each mismatch is read along its response's prefix, as Algorithm 1 tested it."""
    from autojudge.evaluation.grids import labelled_mismatches, validation_mismatches
    from autojudge.models.prompts import encode_prompt

    prompts = [
        encode_prompt(toy_pair.tokenizer, arith_task.build_prompt(e))
        for e in arith_task.load_split("test", 3)
    ]
    grid = validation_mismatches(toy_pair, prompts, 48, 2)
    labelled = labelled_mismatches(toy_pair, grid.problems)
    assert len(labelled.draft_tokens) == sum(len(p.mismatches) for p in grid.problems) > 0
    assert torch.equal(labelled.draft_tokens, grid.draft_tokens)
    assert torch.allclose(labelled.target_logits, grid.target_logits)
    assert torch.allclose(labelled.draft_logits, grid.draft_logits)
    assert labelled.draft_logits.argmax(dim=-1).tolist() == labelled.draft_tokens.tolist()
