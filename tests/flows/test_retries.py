"""The flow's stage tasks retry only transient failures: their retry condition, called as Prefect calls it
(with the Failed state of the task run's error), says yes to a network error or a stage that exited with
TRANSIENT_EXIT, and no to a bug or bad input. No Prefect server: the tasks are only inspected."""

from __future__ import annotations

import inspect

import pytest
from prefect.flows import load_flow_from_entrypoint
from prefect.states import Failed

from autojudge.errors import InputError
from autojudge.orchestration.dvc_stages import TRANSIENT_EXIT, StageError


@pytest.fixture(scope="module")
def stage_tasks(repo) -> dict:
    flow = load_flow_from_entrypoint(f"{repo / 'flows' / 'pipeline.py'}:autojudge_pipeline")
    return {name: flow.fn.__globals__[name] for name in ("repro", "run_in_parallel")}


@pytest.mark.parametrize(
    ("error", "retried"),
    [
        (ConnectionRefusedError(111, "Connection refused"), True),
        (StageError("mine@0", "python stages/mine.py", TRANSIENT_EXIT, ["stage mine@0: ..."]), True),
        (ZeroDivisionError("division by zero"), False),
        (StageError("train", "python stages/train.py", 1, ["ZeroDivisionError: division by zero"]), False),
        (InputError("params: bad"), False),
    ],
    ids=["network", "stage transient", "bug", "stage bug", "bad input"],
)
def test_stage_tasks_retry_only_transient_errors(stage_tasks, error, retried):
    for name, task in stage_tasks.items():
        condition = task.retry_condition_fn
        assert inspect.isfunction(condition), f"{name}: Prefect calls only a plain function (else no retry)"
        assert task.retries == 2
        assert condition(task, None, Failed(data=error)) is retried, name
