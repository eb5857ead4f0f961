"""How heads are decoded, compared and released: ``decoding``, ``evaluate``, ``compare``, ``crossdomain``,
``registry`` and ``promote``."""

# ruff: noqa: RUF012 - pydantic copies mutable field defaults per instance; ruff only recognises a model
# whose pydantic base is in the same file (Section is in params.base)

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PositiveInt, model_validator

from autojudge.errors import InputError
from autojudge.params.base import Section
from autojudge.rules.config import COMPARED_RULES, fly_window


class DecodingParams(Section):
    max_new_tokens: PositiveInt = 192
    window: PositiveInt = 8
    batch_size: PositiveInt = 128  # rows the reference engine decodes at once (sweeps of many settings)
    # the engine of evaluate, compare, crossdomain and autojudge eval: the batched reference engine, or
    # vLLM with the plugin (engine settings of mining.vllm; what users serve with, several GPUs included)
    engine: Literal["reference", "vllm"] = "reference"


class EvaluateParams(Section):
    split: str = "test"
    limit: PositiveInt | None = None
    window: PositiveInt = 8
    topk: list[PositiveInt] = [2, 4, 8]
    # judge thresholds swept, each set where it flags this share of the important validation tokens
    recalls: list[Annotated[float, Field(gt=0, le=1)]] = [0.99, 0.95, 0.9, 0.8, 0.7]


class RegistryParams(Section):
    model_name: str | None = None  # default autojudge-<task>-<pair>
    alias: str = "candidate"


class PromoteParams(Section):
    # vs exact SD, absolute; one of compare.budgets (the comparison gate reads its verdict at this budget)
    max_accuracy_drop: float = Field(default=0.01, ge=0, le=1)
    min_mat_gain: float = Field(default=1.2, gt=0)  # judge MAT / exact SD MAT
    # also require the gates of sampled decoding at this temperature (stage sampled's figures); null: greedy only
    temperature: float | None = Field(default=None, gt=0)


class SampledParams(Section):
    """Stage sampled: the comparison's chosen points (and the head at its threshold) decoded at a
    temperature with several seeds, against exact speculative sampling, with the distribution shift."""

    enabled: bool = True
    temperature: float = Field(default=0.7, gt=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    seeds: list[int] = Field(default=[0, 1], min_length=1)
    splits: list[str] = ["validation", "test"]
    limit: PositiveInt | None = 100  # first N problems of each split (null: all)


class CompareParams(Section):
    """The comparison of every acceptance rule and head: each method's grid decoded on ``validation_split``,
    the point chosen there per budget decoded on each split of ``splits``."""

    splits: list[str] = ["test", "shifted"]
    limit: PositiveInt | None = None  # first N problems of each split of ``splits`` (null: all)
    validation_split: str = "validation"  # where every method's operating point is chosen
    validation_limit: PositiveInt | None = None  # first N problems of it (null: all)
    window: PositiveInt = 8  # = evaluate.window (checks: the promotion gate reads both stages)
    # every method's candidates at the same validation acceptance rates of mismatches (autojudge.evaluation.grids)
    methods: list[str] = list(COMPARED_RULES)  # the rules compared besides the heads (judge, selfjudge)
    rates: list[Annotated[float, Field(gt=0, le=1)]] = [0.25, 0.5, 0.75, 1.0]
    refine: int = Field(default=1, ge=0)  # midpoints probed in each budget's final bracket of rungs
    early_stop: bool = True  # stop a validation candidate once no budget can choose it
    # the rules' other keys, named as in autojudge.rules.config (plugin, autojudge eval)
    confidence: float = Field(default=0.9, gt=0, le=1)  # kl-mask: target top-1 p above: exact verification
    # FLy (thresholds["fly"]: entropy thresholds): vLLM upstream's keys and defaults
    fly_window_size: PositiveInt | None = (
        None  # native decisions after a deferred one; null: min(6, window - 1)
    )
    fly_entropy_top_k: PositiveInt = 3
    budgets: list[Annotated[float, Field(ge=0, le=1)]] = [0.01, 0.02]  # accuracy drops vs target greedy
    bootstrap_samples: int = Field(default=2000, ge=100)  # paired bootstrap over problems: 95% intervals
    seed: int = 0
    # the first N validation problems mined with Algorithm 1: the ceiling's MAT ratio, each chosen point's
    # share of it and its acceptance of labelled mismatches (autojudge.evaluation.comparison_ceiling); 0: none
    ceiling_problems: int = Field(default=100, ge=0)

    @model_validator(mode="after")
    def _check(self) -> CompareParams:
        if "fly" in self.methods:
            try:
                fly_window(self.fly_window_size, self.window)
            except InputError as error:
                raise ValueError(f"compare.fly_window_size / compare.window: {error}") from None
        unknown = sorted(set(self.methods) - set(COMPARED_RULES))
        if unknown:
            raise ValueError(f"compare.methods: unknown {unknown}; known: {', '.join(COMPARED_RULES)}")
        if not self.rates:
            raise ValueError("compare.rates: at least one acceptance rate")
        return self


class CrossDomainParams(Section):
    """Domain shift: every pipeline task's head decodes each domain (``task:split``), own one included."""

    domains: list[str] = ["arith:test", "arith:variant", "pyfunc:test"]
    limit: PositiveInt | None = None  # first N problems of each domain (null: all)
    window: PositiveInt = 16
    bootstrap_samples: int = Field(default=2000, ge=100)  # paired bootstrap over problems: 95% intervals
    seed: int = 0

    @model_validator(mode="after")
    def _check(self) -> CrossDomainParams:
        for domain in self.domains:
            task, _, split = domain.partition(":")
            if not task or not split:
                raise ValueError(f"crossdomain.domains: {domain!r} is not task:split")
        return self
