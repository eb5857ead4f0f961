"""A fake decoder for the comparison and cross-domain stages (no model): per-problem figures that vary,
so intervals are not points, and sorted scores for every head and compared rule; and for the ceiling, mined
problems and their scores at the labelled mismatches."""

import torch

from autojudge.evaluation.figures import ProblemFigures
from autojudge.evaluation.scoring import EvalSummary
from autojudge.features.spec import FeatureSpec
from autojudge.heads.artifact import JudgeHead
from autojudge.mining.search import MinedProblem, Mismatch

N = 30


def toy_head(threshold: float = 0.5) -> JudgeHead:
    """A two-feature head of the toy pair for arith."""
    return JudgeHead(
        torch.ones(2), 0.0, threshold, FeatureSpec("target", 2, 2), "toy", "arith", "h",
        {"thresholds_by_recall": {"0.99": 0.1, "0.7": 0.6}},
    )  # fmt: skip


def problems_of(setting) -> list[ProblemFigures]:
    """Figures that vary per problem (so that intervals are not points): the target misses every tenth
    problem, speculative settings miss as many others (rates from 0.75 up two more in ten, so that the
    early stop cuts them), and their passes follow the setting's MAT."""
    mat = 1.0 + setting.threshold + setting.k + 2 * (setting.method == "exact") + 0.3 * len(setting.method)
    passes = 60 if setting.method == "target" else round(60 / mat)
    misses = {0} if setting.method in ("target", "exact") else {1 + len(setting.method) % 3}
    if (setting.rate or 0.0) >= 0.75:
        misses |= {4, 5}
    return [ProblemFigures(f"p{i}", i % 10 not in misses, 60, passes + i % 3) for i in range(N)]


def fake_run_settings(params, settings, split, limit, head, more_heads=None, folds=None, loss_limit=None):
    """Every setting's outcome, leaving out those ``loss_limit`` stops (as the real sweep does)."""
    outcomes = []
    for index, setting in enumerate(settings):
        problems = problems_of(setting)
        if loss_limit and any(loss_limit.add(index, i, p.correct) for i, p in enumerate(problems)):
            continue
        tokens, passes = sum(p.tokens for p in problems), sum(p.target_passes for p in problems)
        accuracy = sum(p.correct for p in problems) / N
        summary = EvalSummary(setting.name, N, accuracy, tokens / passes, tokens, passes, 0, 0.0)
        outcomes.append((setting, summary, problems))
    return outcomes


def fake_scores(params, heads):
    """Sorted scores at four validation mismatches of every head and compared rule (no model decodes)."""
    return {
        m: torch.tensor([1.0, 2, 3, 4]) if m == "topk" else torch.linspace(0.1, 0.6, 4)
        for m in [*heads, *params.compare.methods]
    }


def fake_mine_first(params, problems, directory, split=None) -> list[MinedProblem]:
    """``problems`` mined problems of 24 tokens: an important mismatch at 2 in every fourth, unimportant
    ones at 6 and 13 in every problem."""
    mined = []
    for i in range(problems):
        response = list(range(100, 124))
        marks = [(2, True)] * (i % 4 == 0) + [(6, False), (13, False)]
        mismatches = [Mismatch(position, response[position], 7, important) for position, important in marks]
        mined.append(MinedProblem(f"v{i}", [1, 2], response, response, "4", mismatches))
    return mined


def fake_labelled_scores(params, heads, problems):
    """Every head's and compared rule's score at each labelled mismatch: 0.55 at the important ones, 0.2 at
    the unimportant ones (top-K: ranks 4 and 1)."""
    scores = {}
    for method in [*heads, *params.compare.methods]:
        important, unimportant = (4.0, 1.0) if method == "topk" else (0.55, 0.2)
        scores[method] = [important if m.important else unimportant for p in problems for m in p.mismatches]
    return scores


def fake_ceiling(monkeypatch, comparison_decode) -> None:
    """The comparison's ceiling on the fake mined problems and scores (no mining, no model)."""
    monkeypatch.setattr(comparison_decode, "mine_first", fake_mine_first)
    monkeypatch.setattr(comparison_decode, "labelled_scores", fake_labelled_scores)


def fake_evaluation() -> dict:
    """An evaluate stage's metrics with one exact-SD row (what a card needs of them)."""
    row = {"setting": "exact W=8", "method": "exact", "accuracy": 1.0, "mat": 2.0, "accepted_mismatches": 0}
    headline = {
        "judge_mat": 2.0,
        "exact_sd_mat": 2.0,
        "mat_gain_vs_exact_sd": 1.0,
        "judge_accuracy": 1.0,
        "target_accuracy": 1.0,
        "accuracy_drop_vs_target": 0.0,
    }
    return {"split": "test", "settings": [row], "headline": headline}
