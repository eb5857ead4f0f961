"""The tasks params may name and the splits each has: what the checks across sections hold names against.

The toy tasks' splits are generated from sizes in params (``toy.splits`` for arith, ``toy.code_splits``
for pyfunc); the other tasks' splits are files: GSM8K's standard train and test files, HumanEval's
packaged problems (written as test) and one LiveCodeBench release (as test). ``autojudge.tasks``
implements the tasks, and its prepare step reads this table; tests/tasks/test_task_splits.py checks that
the two agree for every task.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autojudge.params.world import ToyParams

TOY_SPLIT_SIZES = {"arith": "splits", "pyfunc": "code_splits"}  # task -> the toy key of its split sizes
FILE_SPLITS = {"gsm8k": ("train", "test"), "humaneval": ("test",), "livecodebench": ("test",)}
KNOWN_TASKS = tuple(sorted([*TOY_SPLIT_SIZES, *FILE_SPLITS]))


def task_splits(task: str, toy: ToyParams | None) -> tuple[str, ...] | None:
    """The splits of ``task``; None where params do not say (a toy task without ``toy``, an unknown task)."""
    if task in FILE_SPLITS:
        return FILE_SPLITS[task]
    if task in TOY_SPLIT_SIZES and toy is not None:
        return tuple(getattr(toy, TOY_SPLIT_SIZES[task]))
    return None


def splits_source(task: str) -> str:
    """Where the splits of ``task`` come from, for messages."""
    return f"toy.{TOY_SPLIT_SIZES[task]}" if task in TOY_SPLIT_SIZES else f"the {task} files"
