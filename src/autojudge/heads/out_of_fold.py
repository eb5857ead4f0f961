"""Out-of-fold splits for tasks without a training split (e.g. HumanEval): K folds by problem id.

Each fold's problems are evaluated with a head trained on the other folds' problems, so every
problem gets a prediction from a head that never saw it. Folds are balanced (sizes differ by at
most one) and drawn from the seed alone. Not wired into the pipeline.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator

from autojudge.errors import InputError


def assign_folds(problem_ids: Iterable[str], folds: int, seed: int) -> dict[str, int]:
    """Each distinct problem id's fold in ``range(folds)`` (ids may repeat, e.g. one per mined token)."""
    ids = sorted(set(problem_ids))
    if folds < 2:
        raise InputError(f"out-of-fold evaluation needs at least 2 folds, got {folds}")
    if len(ids) < folds:
        raise InputError(f"cannot split {len(ids)} problems into {folds} folds")
    random.Random(seed).shuffle(ids)
    return {problem_id: index % folds for index, problem_id in enumerate(ids)}


def out_of_fold_splits(
    problem_ids: Iterable[str], folds: int, seed: int
) -> Iterator[tuple[list[str], list[str]]]:
    """Yield ``(train_ids, eval_ids)`` for each fold in turn, ids sorted, every id evaluated exactly once."""
    assignment = assign_folds(problem_ids, folds, seed)
    ordered = sorted(assignment)
    for fold in range(folds):
        train = [i for i in ordered if assignment[i] != fold]
        held_out = [i for i in ordered if assignment[i] == fold]
        yield train, held_out
