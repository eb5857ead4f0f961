"""The comparison's decodes kept on disk, so that a stopped compare stage resumes where it was.

On a real pair the comparison decodes for an hour or more (every method's rate search on validation, then
the chosen points on each test split). Each setting decoded to the end is written here as it finishes
(one JSON file per split, problem limit and setting, written atomically); a rerun with the same inputs
reads those back and decodes only the rest. Probes that the early stop cut short are kept too, with the
tally they stopped at (the same inputs stop them at the same problem), and so are the methods' scores at
the validation mismatches that every probe's threshold comes from: a resumed comparison decodes nothing
it decoded before. What the decodes depend on is recorded in ``made_by.json``: the stage's parameters,
the digests of the heads, the pair's weights, the task's data and the package's source. Any change there
empties the directory first, so a kept decode is never one of other inputs.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from autojudge.evaluation.early_stop import Tally
from autojudge.evaluation.figures import ProblemFigures
from autojudge.evaluation.scoring import EvalSummary
from autojudge.evaluation.setting import Setting
from autojudge.io import atomic_path, read_json, write_json

Outcome = tuple[Setting, EvalSummary, list[ProblemFigures]]
MADE_BY = "made_by.json"
SCORES = "method_scores.safetensors"


def tree_digest(*paths: Path, pattern: str = "*") -> str:
    """SHA-256 over the names (relative to their path) and bytes of the files under ``paths`` matching
    ``pattern``; a missing path counts as empty."""
    digest = hashlib.sha256()
    for root in map(Path, paths):
        files = [root] if root.is_file() else sorted(p for p in root.rglob(pattern) if p.is_file())
        for path in files:
            name = path.name if path == root else path.relative_to(root).as_posix()
            digest.update(f"{name}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


class DecodeCache:
    """Outcomes of ``made_by``'s decodes under ``directory``: kept as they finish, read back on a rerun."""

    def __init__(self, directory: Path, made_by: dict) -> None:
        self.directory = Path(directory)
        record = self.directory / MADE_BY
        if record.is_file() and read_json(record) != made_by:
            shutil.rmtree(self.directory)
            print(f"compare: {self.directory} held decodes of other inputs: removed")
        self.directory.mkdir(parents=True, exist_ok=True)
        write_json(record, made_by)

    def _path(self, split: str, limit: int | None, setting: Setting) -> Path:
        key = json.dumps([split, limit, asdict(setting)], sort_keys=True)
        return self.directory / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"

    def read(
        self, candidates: list[Setting], split: str, limit: int | None
    ) -> tuple[dict[int, Outcome], dict[int, Tally]]:
        """The kept outcomes and the kept early stops (each probe's tally), by candidate index."""
        kept, stopped = {}, {}
        for index, setting in enumerate(candidates):
            path = self._path(split, limit, setting)
            if not path.is_file():
                continue
            stored = read_json(path)
            if "stopped" in stored:
                stopped[index] = Tally(**stored["stopped"])
            else:
                figures = [ProblemFigures(**problem) for problem in stored["figures"]]
                kept[index] = (setting, EvalSummary(**stored["summary"]), figures)
        return kept, stopped

    def keep(
        self, outcomes: list[Outcome], stopped: list[tuple[Setting, Tally]], split: str, limit: int | None
    ) -> None:
        """Write each outcome decoded to the end and each probe the early stop cut, with its tally."""
        for setting, summary, figures in outcomes:
            stored = {
                "setting": asdict(setting),
                "summary": asdict(summary),
                "figures": [asdict(p) for p in figures],
            }
            write_json(self._path(split, limit, setting), stored)
        for setting, tally in stopped:
            record = {"setting": asdict(setting), "stopped": asdict(tally)}
            write_json(self._path(split, limit, setting), record)

    def scores(self, compute: Callable[[], dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        """The methods' sorted validation scores, in their order: the kept ones, or ``compute()``'s, kept."""
        path = self.directory / SCORES
        if path.is_file():
            with safe_open(path, "pt") as stored:
                return {
                    method: stored.get_tensor(method) for method in json.loads(stored.metadata()["methods"])
                }
        by_method = compute()
        tensors = {method: values.contiguous() for method, values in by_method.items()}
        with atomic_path(path) as temporary:
            save_file(tensors, str(temporary), metadata={"methods": json.dumps(list(by_method))})
        return by_method
