"""The mined data set: one row per tested mismatch, as Parquet through `datasets`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Dataset

from autojudge.errors import InputError
from autojudge.io import atomic_path
from autojudge.mining.search import MinedProblem, Mismatch

COLUMNS = ("problem_id", "position", "target_token", "draft_token", "important", "prompt_ids", "response_ids")


def mined_rows(problems: list[MinedProblem]) -> list[dict]:
    return [
        {
            "problem_id": problem.id,
            "position": m.position,
            "target_token": m.target_token,
            "draft_token": m.draft_token,
            "important": m.important,
            "prompt_ids": problem.prompt_ids,
            "response_ids": problem.response_ids,
        }
        for problem in problems
        for m in problem.mismatches
    ]


def write_parquet(path: Path, rows: list[dict]) -> None:
    """Write rows as Parquet atomically."""
    with atomic_path(path) as temporary:
        Dataset.from_list(rows).to_parquet(str(temporary))


def read_parquet(path: Path, columns: tuple[str, ...]) -> Dataset:
    """A Parquet data set that must hold ``columns``; errors name the file."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"data set not found: {path}")
    try:
        dataset = Dataset(pq.read_table(path))
    except (pa.ArrowException, OSError) as error:
        raise InputError(f"{path}: not a readable Parquet file ({error})") from None
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise InputError(f"{path}: missing columns {missing}")
    if len(dataset) == 0:
        raise InputError(f"{path}: no rows")
    return dataset


def problems_from_rows(rows: Iterable[Mapping]) -> list[MinedProblem]:
    """Regroup mismatch rows (a data set or dicts) into problems (in first-seen order)."""
    problems: dict[str, MinedProblem] = {}
    for row in rows:
        problem = problems.get(row["problem_id"])
        if problem is None:
            problem = problems[row["problem_id"]] = MinedProblem(
                id=row["problem_id"],
                prompt_ids=list(row["prompt_ids"]),
                response_ids=list(row["response_ids"]),
                initial_response_ids=[],
                answer=None,
            )
        problem.mismatches.append(
            Mismatch(row["position"], row["target_token"], row["draft_token"], row["important"])
        )
    return list(problems.values())
