"""Sharded, resumable mining: every finished problem is one atomically written file.

A shard directory holds ``config.json`` (the fingerprint of what is mined), ``problems/<id>.json``
(one per finished problem) and, once complete, ``summary.json``. Re-running a shard skips the
problems already written (a problem whose prompt changed is mined again), so growing the problem
count keeps every finished problem; a shard whose settings fingerprint differs is cleared.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from autojudge.errors import InputError
from autojudge.io import read_json, write_json
from autojudge.mining.search import ImportantTokenSearch, MinedProblem, MiningProblem


def shard_of(problems: list[MiningProblem], index: int, count: int) -> list[MiningProblem]:
    """Problems of shard ``index`` out of ``count`` (round robin, so shards are balanced)."""
    if count < 1 or not 0 <= index < count:
        raise InputError(f"shard {index} of {count} does not exist: need 0 <= index < count")
    return problems[index::count]


def fingerprint(settings: dict) -> str:
    """Hash of the mining settings (what a label depends on besides the problem itself)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:20]


def _file_name(problem_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", problem_id) + ".json"


@dataclass
class ShardSummary:
    problems: int
    problems_without_answer: int
    mismatches: int
    important: int
    mined_this_run: int
    minutes_this_run: float

    @property
    def important_fraction(self) -> float:
        return self.important / self.mismatches if self.mismatches else 0.0

    @property
    def problems_per_minute(self) -> float:
        return self.mined_this_run / self.minutes_this_run if self.minutes_this_run else 0.0

    def as_dict(self) -> dict:
        return {
            **self.__dict__,
            "important_fraction": round(self.important_fraction, 4),
            "problems_per_minute": round(self.problems_per_minute, 2),
        }


def prepare_shard_dir(directory: Path, key: str, problems: list[MiningProblem]) -> list[MiningProblem]:
    """Make ``directory`` ready for mining under fingerprint ``key``; return the problems still to mine.

    Finished files of problems no longer in the shard are removed, so the shard holds exactly its problems.
    """
    config = directory / "config.json"
    if config.exists() and read_json(config).get("fingerprint") != key:
        shutil.rmtree(directory)  # mined under other settings: start over
    (directory / "problems").mkdir(parents=True, exist_ok=True)
    write_json(config, {"fingerprint": key})
    (directory / "summary.json").unlink(missing_ok=True)
    wanted = {_file_name(p.id): p for p in problems}
    todo = dict(wanted)
    for path in (directory / "problems").glob("*.json"):
        problem = wanted.get(path.name)
        if problem is None:
            path.unlink()
        elif read_json(path)["prompt_ids"] == problem.prompt_ids:
            del todo[path.name]
    return list(todo.values())


def load_shard(directory: Path) -> list[MinedProblem]:
    """The finished problems of a shard directory."""
    if not (directory / "problems").is_dir():
        raise InputError(f"mining shard not found: {directory}")
    return [
        MinedProblem.from_dict(read_json(path)) for path in sorted((directory / "problems").glob("*.json"))
    ]


def summarize(results: list[MinedProblem], mined_this_run: int, seconds: float) -> ShardSummary:
    return ShardSummary(
        problems=len(results),
        problems_without_answer=sum(r.answer is None for r in results),
        mismatches=sum(len(r.mismatches) for r in results),
        important=sum(m.important for r in results for m in r.mismatches),
        mined_this_run=mined_this_run,
        minutes_this_run=round(seconds / 60, 4),
    )


def mine_shard(
    search: ImportantTokenSearch, problems: list[MiningProblem], directory: Path, settings: dict
) -> ShardSummary:
    """Mine every unfinished problem of the shard, writing each as soon as it is done."""
    todo = prepare_shard_dir(directory, fingerprint(settings), problems)
    started = time.perf_counter()
    progress = tqdm(
        total=len(problems),
        initial=len(problems) - len(todo),
        desc=f"mine {directory.name}",
        unit="problem",
        mininterval=2,
    )
    for result in search.run(todo):
        write_json(directory / "problems" / _file_name(result.id), result.as_dict())
        progress.update(1)
    progress.close()
    summary = summarize(load_shard(directory), len(todo), time.perf_counter() - started)
    write_json(directory / "summary.json", {"settings": settings, **summary.as_dict()})
    return summary


def merge_shards(directories: list[Path]) -> tuple[list[MinedProblem], dict]:
    """All problems of complete shards, and the mining summary; an incomplete shard is an error."""
    problems: list[MinedProblem] = []
    minutes = mined = 0.0
    for directory in directories:
        if not (directory / "summary.json").is_file():
            raise InputError(f"mining shard {directory} is incomplete (no summary.json): run its mine stage")
        shard_summary = read_json(directory / "summary.json")
        minutes += shard_summary["minutes_this_run"]
        mined += shard_summary["mined_this_run"]
        problems.extend(load_shard(directory))
    ids = [p.id for p in problems]
    if len(set(ids)) != len(ids):
        raise InputError(f"mining shards {[str(d) for d in directories]} overlap: a problem was mined twice")
    summary = summarize(problems, int(mined), minutes * 60).as_dict()
    summary["shards"] = len(directories)
    return problems, summary
