"""Out-of-fold splits for tasks without a training split (e.g. HumanEval): K folds by problem id.

Each fold's problems are evaluated with a head trained on the other folds' problems, so every
problem gets a prediction from a head that never saw it (the AutoJudge paper's LiveCodeBench protocol).
Folds are balanced (sizes differ by at most one) and drawn from the seed alone. With
``train.protocol: out_of_fold`` the train stage writes one head per fold next to the head trained on
every problem (which is the one registered and served), and the evaluate and compare stages decode each
problem of the mined split with its fold's head.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from autojudge.errors import InputError
from autojudge.heads.artifact import JudgeHead
from autojudge.io import read_json, write_json

FOLDS_DIR = "folds"
ASSIGNMENT_FILE = "assignment.json"


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


@dataclass(frozen=True)
class FoldHeads:
    """Which fold each problem is in, and the head trained without each fold (``paths[k]``)."""

    fold_of: dict[str, int]
    paths: list[Path]

    def fold(self, problem_id: str) -> int:
        if problem_id not in self.fold_of:
            raise InputError(f"problem {problem_id!r} is in no out-of-fold assignment: retrain the heads")
        return self.fold_of[problem_id]


def fit_fold_heads(
    features: np.ndarray,
    groups: np.ndarray,
    problem_ids: list[str],
    folds: int,
    seed: int,
    fit: Callable[[np.ndarray], JudgeHead],
    directory: Path,
) -> FoldHeads:
    """Assign ``problem_ids`` to folds; for each fold, ``fit(rows)`` on the mined rows of the other
    folds' problems; write the heads and the assignment under ``directory``."""
    fold_of = assign_folds(problem_ids, folds, seed)
    unknown = sorted(set(groups.tolist()) - set(fold_of))
    if unknown:
        raise InputError(
            f"mined problems {unknown[:3]} are not in the evaluated split: mine the split you evaluate"
        )
    row_fold = np.array([fold_of[g] for g in groups.tolist()])
    paths = []
    for fold in range(folds):
        head = fit(np.flatnonzero(row_fold != fold))
        paths.append(head.save(directory / f"fold_{fold}.safetensors"))
    write_json(directory / ASSIGNMENT_FILE, {"folds": folds, "seed": seed, "fold_of": fold_of})
    return FoldHeads(fold_of, paths)


def load_fold_heads(directory: Path) -> FoldHeads:
    """The fold heads ``fit_fold_heads`` wrote; errors name what is missing."""
    directory = Path(directory)
    assignment = read_json(directory / ASSIGNMENT_FILE)
    paths = [directory / f"fold_{fold}.safetensors" for fold in range(assignment["folds"])]
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        raise InputError(f"out-of-fold heads missing: {missing}")
    return FoldHeads(assignment["fold_of"], paths)


def fold_heads_for(params, heads_dir: Path, split: str) -> FoldHeads | None:
    """The fold heads that decode ``split``: only under the out-of-fold protocol, only on the mined split
    (any other split was never trained on, so the head trained on every problem decodes it)."""
    if params.train.protocol != "out_of_fold" or split != params.mining.split:
        return None
    return load_fold_heads(Path(heads_dir) / FOLDS_DIR)


def threshold_at(head: JudgeHead, recall: float | None) -> float:
    """The head's threshold for a validation recall (``None``: its own chosen threshold)."""
    if recall is None:
        return head.threshold
    stored = {round(float(r), 6): t for r, t in head.info.get("thresholds_by_recall", {}).items()}
    if round(recall, 6) not in stored:
        raise InputError(f"fold head has no threshold for recall {recall}; it has {sorted(stored)}")
    return stored[round(recall, 6)]
