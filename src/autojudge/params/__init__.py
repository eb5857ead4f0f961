"""Typed view of ``params.yaml``: every stage and command reads its settings from here.

The schema, one pydantic model per section (a ``base.Section``: unknown keys are errors, values frozen):

- ``models``: the draft/target pair and the stages that make real checkpoints (``pair``, ``convert``,
  ``distill``, ``eagle``, ``finetune``);
- ``world``: the toy world (``toy``: data splits, the toy pair's training);
- ``pipeline``: the stages up to the heads (``task``, ``mining``, ``features``, ``train``, ``selfjudge``);
- ``evaluation``: decoding, evaluation, comparison and release (``decoding``, ``evaluate``, ``compare``,
  ``crossdomain``, ``registry``, ``promote``);
- ``bench``: the vLLM tokens/s benchmark (``bench``) and the checks of a benchmark plan.

This module holds the root ``Params`` (the sections and the pipeline's per-task overrides; its validators
run the checks across sections of ``checks``, against the tasks and splits of ``task_splits``),
``load_params`` and ``validate_params`` (errors name the file and the offending key, one line each:
``messages``), ``overlay`` (presets and per-task overrides) and ``task_data_dir``; ``access`` records which
keys a stage reads (its dvc.yaml ``params:`` must declare them). Import every name from
here (``from autojudge.params import X``): ``__all__`` is the package's API.

May import: ``autojudge.errors``, ``autojudge.io`` and ``autojudge.rules.config`` only (the layers below
it, ``tests/test_layers.py``).
"""

# ruff: noqa: RUF012 - pydantic copies mutable field defaults per instance; ruff only recognises a model
# whose pydantic base is in the same file (Section is in params.base)

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError, model_validator

from autojudge.errors import InputError
from autojudge.params import access, checks
from autojudge.params.base import Section
from autojudge.params.bench import BenchParams, bench_plan_problems
from autojudge.params.evaluation import (
    CompareParams,
    CrossDomainParams,
    DecodingParams,
    EvaluateParams,
    PromoteParams,
    RegistryParams,
    SampledParams,
)
from autojudge.params.messages import error_line
from autojudge.params.models import (
    ConvertParams,
    DistillParams,
    EagleParams,
    FinetuneParams,
    PairParams,
    ResponsesParams,
)
from autojudge.params.pipeline import (
    FeaturesParams,
    MiningParams,
    OpenAIParams,
    SelfJudgeParams,
    TaskParams,
    TrainParams,
    VllmParams,
)
from autojudge.params.task_splits import KNOWN_TASKS, TOY_SPLIT_SIZES, task_splits
from autojudge.params.world import ToyModelParams, ToyParams

__all__ = [
    "KNOWN_TASKS",
    "TOY_SPLIT_SIZES",
    "BenchParams",
    "CompareParams",
    "ConvertParams",
    "CrossDomainParams",
    "DecodingParams",
    "DistillParams",
    "EagleParams",
    "EvaluateParams",
    "FeaturesParams",
    "FinetuneParams",
    "MiningParams",
    "OpenAIParams",
    "PairParams",
    "Params",
    "PromoteParams",
    "RegistryParams",
    "ResponsesParams",
    "SampledParams",
    "Section",
    "SelfJudgeParams",
    "TaskParams",
    "ToyModelParams",
    "ToyParams",
    "TrainParams",
    "VllmParams",
    "bench_plan_problems",
    "load_params",
    "overlay",
    "task_data_dir",
    "task_splits",
    "validate_params",
]


class Params(Section):
    task: TaskParams = TaskParams()
    pair: PairParams = PairParams()
    decoding: DecodingParams = DecodingParams()
    mining: MiningParams = MiningParams()
    features: FeaturesParams = FeaturesParams()
    train: TrainParams = TrainParams()
    evaluate: EvaluateParams = EvaluateParams()
    registry: RegistryParams = RegistryParams()
    promote: PromoteParams = PromoteParams()
    bench: BenchParams = BenchParams()
    selfjudge: SelfJudgeParams = SelfJudgeParams()
    compare: CompareParams = CompareParams()
    sampled: SampledParams = SampledParams()
    crossdomain: CrossDomainParams = CrossDomainParams()
    toy: ToyParams | None = None
    convert: dict[str, ConvertParams] = {}  # stage convert@<name> (dvc.yaml foreach): none for the toy pair
    distill: dict[str, DistillParams] = {}  # stage distill@<name>: none for the toy pair
    eagle: dict[str, EagleParams] = {}  # stage eagle@<name>: none for the toy pair
    finetune: dict[str, FinetuneParams] = {}  # stage finetune@<name>: none for the toy pair
    # the pipeline's tasks (dvc.yaml foreach/matrix), one head each, data in data/<name>: each maps to
    # sections that override the ones above for that task's stages (``for_task``); ``task`` is the
    # primary one, where SelfJudge, the comparison and the benchmark run
    tasks: dict[str, dict[str, Any]] = {}

    @model_validator(mode="after")
    def _check_tasks(self) -> Params:
        if not self.tasks:
            return self
        if self.task.name not in self.tasks:
            raise ValueError(f"task.name {self.task.name!r} must be one of tasks {list(self.tasks)}")
        for name, sections in self.tasks.items():
            keys = set(sections or {})
            if keys - set(type(self).model_fields) or keys & {"task", "tasks"}:
                raise ValueError(
                    f"tasks.{name}: may override sections of params but task(s), got {sorted(keys)}"
                )
        if self.registry.model_name and len(self.tasks) > 1:
            raise ValueError("registry.model_name names one model; with several tasks leave it null")
        return self

    def task_raw(self, name: str) -> dict[str, Any]:
        """These params as pipeline task ``name``'s stages see them, unvalidated: ``task`` set to it, its
        overrides applied."""
        raw = BaseModel.model_dump(self, mode="json")  # not a read: the task's view is watched instead
        raw["task"] = {"name": name, "data_dir": str(task_data_dir(name))}
        return overlay(raw, self.tasks[name] or {})

    def for_task(self, name: str) -> Params:
        """These params as one pipeline task's stages see them: ``task`` set to it, its overrides applied."""
        if name not in self.tasks:
            raise InputError(f"task {name!r} is not a pipeline task; tasks: {list(self.tasks)}")
        view = validate_params(self.task_raw(name), f"params of task {name!r}")
        if access.RECORDER is not None and access.RECORDER.watching(self):
            access.RECORDER.watch(view, name)
        return view

    @model_validator(mode="after")
    def _check_sampled_gate(self) -> Params:
        wanted = self.promote.temperature
        if wanted is not None and (not self.sampled.enabled or wanted != self.sampled.temperature):
            raise ValueError(
                f"promote.temperature {wanted} needs stage sampled at that temperature "
                f"(sampled.enabled {self.sampled.enabled}, sampled.temperature {self.sampled.temperature})"
            )
        return self

    @model_validator(mode="after")
    def _check_protocol(self) -> Params:
        mined, evaluated = self.mining.split, self.evaluate.split
        if self.train.protocol == "held_out" and mined == evaluated:
            raise ValueError(
                f"train.protocol: held_out evaluates on split {evaluated!r}, which is also mined "
                "(mining.split); use another split or protocol: out_of_fold"
            )
        if self.train.protocol == "out_of_fold":
            if mined != evaluated:
                raise ValueError(
                    f"train.protocol: out_of_fold mines the evaluated split: mining.split {mined!r} "
                    f"must equal evaluate.split {evaluated!r}"
                )
            if self.train.threshold_policy != "recall":
                raise ValueError("train.protocol: out_of_fold chooses thresholds by threshold_policy: recall")
        return self

    @model_validator(mode="after")
    def _check_across_sections(self) -> Params:
        problem = next(checks.problems(self), None)
        if problem is not None:
            raise ValueError(problem)
        return self


def task_data_dir(name: str) -> Path:
    """Where a pipeline task's split files are."""
    return Path("data") / name


def overlay(base: dict, changes: dict) -> dict:
    """``base`` with ``changes`` merged in, recursively for mappings; ``None`` drops a key."""
    merged = dict(base)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = overlay(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_params(path: Path = Path("params.yaml"), task: str | None = None) -> Params:
    """Read and validate the parameters file (as pipeline task ``task``'s stages see it, if given);
    errors name the file and the offending key."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"parameters file not found: {path}")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise InputError(f"{path}: not valid YAML ({error})") from None
    if not isinstance(raw, dict):
        raise InputError(f"{path}: expected a mapping at the top level")
    params = validate_params(raw, str(path))
    params = params if task is None else params.for_task(task)
    if (recorder := access.recorder()) is not None:
        recorder.watch(params, task)
    return params


def validate_params(raw: dict, source: str) -> Params:
    """Validate a parameters mapping; errors name ``source`` and the offending key."""
    try:
        return Params.model_validate(raw)
    except ValidationError as error:
        raise InputError(f"{source}: invalid parameters: {error_line(error)}") from None
