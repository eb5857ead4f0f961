"""Which params a stage reads, recorded as it runs: DVC reruns a stage only when a key its dvc.yaml entry
declares changes, so the suite checks every key a stage read against that list.

Recording is on in a DVC stage's process (``DVC_STAGE``: set by ``dvc repro`` and the orchestrator) when
``AUTOJUDGE_PARAMS_ACCESS_LOG`` names a directory: ``load_params`` watches what it returns, each section
reports the fields read from it (``base.Section``), and at exit the process writes one file of its own
there, ``{"stage": <DVC address>, "reads": {<task or "">: [dotted keys]}}``. A key is recorded when a value
is read (not a section passed through), a section when it is dumped (``model_dump``), ``*`` when the whole
params is. Reads through a pipeline task's view (``Params.for_task``) are kept under that task (its
overrides, ``tasks.<task>``, may set them); the view's ``task`` section comes from the task's name, not the
file, and is not recorded. A ``model_copy`` is watched as its original, less the keys it replaces.
"""

from __future__ import annotations

import atexit
import os
import secrets
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from autojudge.io import write_json

ACCESS_LOG = "AUTOJUDGE_PARAMS_ACCESS_LOG"
STAGE = "DVC_STAGE"
WHOLE = "*"  # the whole params dumped


@dataclass(frozen=True)
class _Watched:
    section: BaseModel  # held, so that no other object takes its id while it is watched
    task: str
    path: str
    unrecorded: frozenset[str]  # fields whose values did not come from the params file


class Recorder:
    """The params keys one process reads, by pipeline task ("" outside a task's view)."""

    def __init__(self) -> None:
        self._watched: dict[int, _Watched] = {}
        self.reads: dict[str, set[str]] = defaultdict(set)

    def watch(self, params: BaseModel, task: str | None = None) -> None:
        """Record reads of ``params`` (the root ``Params``; pipeline task ``task``'s view) and its sections."""
        self._watch(params, task or "", "", frozenset({"task"} if task else ()))

    def _watch(self, section: BaseModel, task: str, path: str, unrecorded: frozenset[str]) -> None:
        self._watched[id(section)] = _Watched(section, task, path, unrecorded)
        for name, value in vars(section).items():
            if name not in unrecorded:
                for key, child in _sections_in(name, value):
                    self._watch(child, task, _join(path, key), frozenset())

    def watching(self, section: BaseModel) -> bool:
        return self._of(section) is not None

    def _passes_through(self, value: Any) -> bool:
        """Whether reading ``value`` only leads to watched sections (whose own fields are recorded)."""
        if isinstance(value, dict):
            return bool(value) and all(id(item) in self._watched for item in value.values())
        return id(value) in self._watched

    def _of(self, section: BaseModel) -> _Watched | None:
        watched = self._watched.get(id(section))
        return watched if watched is not None and watched.section is section else None

    def read(self, section: BaseModel, name: str, value: Any) -> None:
        """``section``'s attribute ``name`` was read and is ``value``."""
        if name not in type(section).model_fields or (watched := self._of(section)) is None:
            return
        if name not in watched.unrecorded and not self._passes_through(value):
            self.reads[watched.task].add(_join(watched.path, name))

    def dumped(self, section: BaseModel) -> None:
        """``section`` was dumped whole."""
        if (watched := self._of(section)) is not None:
            self.reads[watched.task].add(watched.path or WHOLE)

    def copied(self, section: BaseModel, copy: BaseModel, update: dict[str, Any]) -> None:
        """``copy`` is ``section`` with ``update``: watched as it, less the keys replaced by other values."""
        if (watched := self._of(section)) is not None:
            replaced = {key for key, value in update.items() if not self._passes_through(value)}
            self._watched[id(copy)] = _Watched(
                copy, watched.task, watched.path, watched.unrecorded | replaced
            )

    def write(self, directory: Path, stage: str) -> None:
        """This process's record: a file of its own in ``directory``."""
        reads = {task: sorted(keys) for task, keys in self.reads.items()}
        write_json(directory / f"{os.getpid()}-{secrets.token_hex(4)}.json", {"stage": stage, "reads": reads})


RECORDER: Recorder | None = None  # the process's recorder, once started


def recorder() -> Recorder | None:
    """The process's recorder: started on first use in a DVC stage whose environment asks for it (written
    at exit), else None."""
    global RECORDER
    directory, stage = os.environ.get(ACCESS_LOG), os.environ.get(STAGE)
    if RECORDER is None and directory and stage:
        RECORDER = Recorder()
        atexit.register(RECORDER.write, Path(directory), stage)
    return RECORDER


def _sections_in(name: str, value: Any) -> list[tuple[str, BaseModel]]:
    """The sections a field holds, by key: itself, or the entries of a mapping (e.g. ``convert``)."""
    if isinstance(value, BaseModel):
        return [(name, value)]
    if isinstance(value, dict):
        return [(f"{name}.{key}", item) for key, item in value.items() if isinstance(item, BaseModel)]
    return []


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
