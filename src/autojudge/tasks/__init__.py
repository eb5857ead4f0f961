"""Tasks by name: data preparation, the toy generators (arith, pyfunc), answers and their checkers.

Imports sandbox (code answers run there), params and lower layers.
"""

from pathlib import Path

from autojudge.errors import InputError
from autojudge.tasks.arith import ArithTask
from autojudge.tasks.base import Example, Task
from autojudge.tasks.gsm8k import Gsm8kTask
from autojudge.tasks.humaneval import HumanEvalTask
from autojudge.tasks.livecodebench import LiveCodeBenchTask
from autojudge.tasks.pyfunc import PyFuncTask

TASKS: dict[str, type[Task]] = {
    task.name: task for task in (ArithTask, Gsm8kTask, PyFuncTask, HumanEvalTask, LiveCodeBenchTask)
}


def get_task(name: str, data_dir: Path) -> Task:
    """The task called ``name`` reading its splits from ``data_dir``."""
    if name not in TASKS:
        raise InputError(f"unknown task {name!r}; known tasks: {', '.join(sorted(TASKS))}")
    return TASKS[name](data_dir)


__all__ = ["TASKS", "Example", "Task", "get_task"]
