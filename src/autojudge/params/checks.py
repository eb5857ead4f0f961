"""Checks across sections: the names and values one section of params uses for what another defines.

Run by ``Params``' validators, so that a typo fails when params load, before any stage runs, with one line
naming the key, the value and what is allowed:

- tasks: ``task.name``, the keys of ``tasks``, ``crossdomain.domains`` and the ``task`` of distill, eagle and
  finetune entries name known tasks (``task_splits.KNOWN_TASKS``), a domain a pipeline task;
- splits: every split a stage reads is one the task has (``task_splits.task_splits``);
- budgets: ``promote.max_accuracy_drop`` is one of ``compare.budgets`` (the promotion gate reads the
  comparison's verdict at that budget, docs/comparison.md);
- windows: ``compare.window`` equals ``evaluate.window`` (the gate reads both stages' figures of the head);
- mined problems: no distill or eagle entry trained its proposer on problems that mining mines (its first
  ``problems`` of the mining task's split must lie within ``mining.skip``: a proposer agrees with the
  responses it was trained on, so their mismatches are not the ones it makes on new problems);
- proposer: a pair drafting with an EAGLE head (``pair.proposer: eagle``) decodes on vLLM, with heads on the
  target's hidden states and greedy mining (the reference engines and features chain a draft model only);
- pipeline tasks: each task's params, its overrides applied, pass every check (``tasks.<name>: ...``).

Checks within one section stay with it (``bench.overhead_window`` in ``bench.windows`` and the benchmark's
judge thresholds in the rule's range: ``bench.bench_plan_problems``; value ranges: field constraints).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pydantic import ValidationError

from autojudge.params.messages import error_line
from autojudge.params.task_splits import KNOWN_TASKS, splits_source, task_splits

if TYPE_CHECKING:
    from autojudge.params import Params

ENTRY_SECTIONS = ("distill", "eagle", "finetune")  # named entries that read a task's splits
ENTRY_SPLITS = ("split", "eval_split", "eval_splits")  # their keys naming splits (each has some)


def problems(params: Params) -> Iterator[str]:
    """Every problem across the sections of ``params``, one line each, pipeline tasks last."""
    yield from task_problems(params)
    yield from split_problems(params)
    yield from budget_problems(params)
    yield from window_problems(params)
    yield from mined_problems(params)
    yield from proposer_problems(params)
    yield from pipeline_task_problems(params)


def _unknown_task(key: str, name: str, what: str = "is not a") -> str:
    return f"{key}: {name!r} {what} known task; known tasks: {', '.join(KNOWN_TASKS)}"


def task_problems(params: Params) -> Iterator[str]:
    """Task names that no task has; domains of no pipeline task."""
    named = [("task.name", params.task.name), *(("tasks", name) for name in params.tasks)]
    named += [
        (f"{section}.{entry}.task", spec.task)
        for section in ENTRY_SECTIONS
        for entry, spec in getattr(params, section).items()
    ]
    yield from (_unknown_task(key, name) for key, name in named if name not in KNOWN_TASKS)
    for domain in params.crossdomain.domains:
        task = domain.partition(":")[0]
        if task not in KNOWN_TASKS:
            yield _unknown_task("crossdomain.domains", domain, "names no")
        elif params.tasks and task not in params.tasks:
            yield f"crossdomain.domains: {domain!r} names no task of tasks {list(params.tasks)}"


def split_references(params: Params) -> Iterator[tuple[str, str, str]]:
    """(key, task, split) of every split that a stage of ``params`` reads."""
    task = params.task.name
    yield "mining.split", task, params.mining.split
    yield "evaluate.split", task, params.evaluate.split
    yield "bench.split", task, params.bench.split
    yield "compare.validation_split", task, params.compare.validation_split
    yield from (("compare.splits", task, split) for split in params.compare.splits)
    if params.sampled.enabled:
        yield from (("sampled.splits", task, split) for split in params.sampled.splits)
    if params.train.threshold_policy == "accuracy":
        yield "train.calibration_split", task, params.train.calibration_split
    for domain in params.crossdomain.domains:
        domain_task, _, split = domain.partition(":")
        yield "crossdomain.domains", domain_task, split
    for section in ENTRY_SECTIONS:
        for entry, spec in getattr(params, section).items():
            for field in ENTRY_SPLITS:
                named = getattr(spec, field, ())
                for split in [named] if isinstance(named, str) else named:
                    yield f"{section}.{entry}.{field}", spec.task, split


def split_problems(params: Params) -> Iterator[str]:
    """Splits the task does not have (skipped where params do not say which it has)."""
    for key, task, split in split_references(params):
        splits = task_splits(task, params.toy)
        if splits is not None and split not in splits:
            yield (
                f"{key}: {split!r} is not a split of task {task!r}; its splits "
                f"({splits_source(task)}): {', '.join(splits)}"
            )


def budget_points(budget: float) -> str:
    """A budget as the comparison keys its verdicts (``evaluation.comparison.budget_key``): points."""
    return f"{100 * budget:g}"


def budget_problems(params: Params) -> Iterator[str]:
    """A promotion budget the comparison does not decide."""
    drop, budgets = params.promote.max_accuracy_drop, params.compare.budgets
    if budget_points(drop) not in {budget_points(budget) for budget in budgets}:
        yield (
            f"promote.max_accuracy_drop: {drop:g} must be one of compare.budgets {list(budgets)} "
            "(the promotion gate reads the comparison's verdict at that budget)"
        )


def mined_problems(params: Params) -> Iterator[str]:
    """A proposer trained on problems that mining mines."""
    mining = params.mining
    for section in ("distill", "eagle"):
        for entry, spec in getattr(params, section).items():
            if spec.task == params.task.name and spec.split == mining.split and spec.problems > mining.skip:
                yield (
                    f"mining.skip: {mining.skip} mines problems of {mining.split!r} that {section}.{entry} "
                    f"trains on (its first {spec.problems}); set mining.skip >= {spec.problems}"
                )


def window_problems(params: Params) -> Iterator[str]:
    """Windows that must be equal and are not."""
    evaluated, compared = params.evaluate.window, params.compare.window
    if compared != evaluated:
        yield (
            f"compare.window: {compared} must equal evaluate.window {evaluated} (the promotion gate reads "
            "the head's figures from both stages, and the comparison's window is the one served)"
        )


def proposer_problems(params: Params) -> Iterator[str]:
    """Settings an EAGLE head cannot serve: it has no decoder of its own in the reference engines, no hidden
    states of its own for features, and guesses greedily (``models.eagle_predictor``)."""
    if params.pair.proposer != "eagle":
        return
    why = "pair.proposer 'eagle'"
    if params.decoding.engine != "vllm":
        yield (
            f"decoding.engine: {params.decoding.engine!r} cannot decode {why} (the reference engines chain a "
            "draft model's guesses); use 'vllm'"
        )
    if params.features.source != "target":
        yield f"features.source: {params.features.source!r} reads draft hidden states, {why} has none; use 'target'"
    if params.mining.gumbel_seed is not None:
        yield f"mining.gumbel_seed: {params.mining.gumbel_seed} samples the draft, {why} guesses greedily; use null"


def pipeline_task_problems(params: Params) -> Iterator[str]:
    """The first problem of each pipeline task's params (``task_raw``: its overrides applied)."""
    for name in params.tasks:
        try:
            type(params).model_validate({**params.task_raw(name), "tasks": {}})
        except ValidationError as error:
            yield f"tasks.{name}: {error_line(error)}"
