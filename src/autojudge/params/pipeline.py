"""The pipeline's stages up to its heads: ``task``, ``mining`` (with its ``vllm`` and ``openai`` engine
settings), ``features``, ``train`` and ``selfjudge``."""

# ruff: noqa: RUF012 - pydantic copies mutable field defaults per instance; ruff only recognises a model
# whose pydantic base is in the same file (Section is in params.base)

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, NonNegativeInt, PositiveInt, model_validator

from autojudge.params.base import Section


class TaskParams(Section):
    name: str = "arith"
    data_dir: Path = Path("data/arith")


class VllmParams(Section):
    tensor_parallel_size: PositiveInt = 1
    max_model_len: PositiveInt = 512
    engine_kwargs: dict[str, Any] = {}  # passed to vllm.LLM (memory, eager mode, device settings)
    in_process: bool = False  # engine core and worker in the stage's process (one device; not the benchmark)

    @model_validator(mode="after")
    def _check(self) -> VllmParams:
        if self.in_process and self.tensor_parallel_size != 1:
            raise ValueError("in_process needs tensor_parallel_size 1 (more devices need worker processes)")
        return self


class OpenAIParams(Section):
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "target"
    concurrency: PositiveInt = 16


class MiningParams(Section):
    split: str = "train"
    problems: PositiveInt | None = None  # first N problems of the split (after skip); all when null
    skip: NonNegativeInt = 0  # first problems of the split passed over: those a proposer was trained on
    shards: list[int] = [0]  # one DVC stage per entry; shard i of len(shards)
    engine: Literal["vllm", "hf", "openai"] = "vllm"
    max_response_tokens: PositiveInt = 192  # T_max: total response length cap
    pool_size: PositiveInt = 64  # problems searched at once (one engine call per round for all)
    batch_size: PositiveInt = 16  # hf engine and draft predictions
    gumbel_seed: int | None = None  # Gumbel-max sampling mode (appendix A): the hf and vllm engines
    vllm: VllmParams = VllmParams()
    openai: OpenAIParams = OpenAIParams()

    @model_validator(mode="after")
    def _check(self) -> MiningParams:
        if sorted(self.shards) != list(range(len(self.shards))):
            raise ValueError(f"shards must be 0..n-1 without gaps, got {self.shards}")
        if self.gumbel_seed is not None and self.engine == "openai":
            raise ValueError(
                "gumbel_seed (sampling mode) needs engine hf or vllm (a server cannot add the noise)"
            )
        return self


class FeaturesParams(Section):
    source: Literal["target", "draft", "both"] = "both"
    dtype: Literal["float32", "float64"] = "float32"  # appendix C: half precision features drift
    batch_size: PositiveInt = 16


class ContextHeadParams(Section):
    """The context head: a second judge head whose feature groups (``autojudge.features.spec``), weight on
    important mismatches and C are chosen together by grouped cross-validation."""

    enabled: bool = True
    groups: list[list[str]] = [
        ["token_state", "context_state", "rule_scores", "token_classes"],
        ["token_state", "rule_scores", "token_classes"],
        ["rule_scores", "token_classes"],
    ]
    important_weights: list[float] = [1.0, 10.0]  # cost-sensitive candidates: a missed important one costs w
    c_grid: list[float] = [
        1.0,
        0.1,
        0.01,
        0.001,
    ]  # its features are standardised groups, not raw states alone

    @model_validator(mode="after")
    def _check(self) -> ContextHeadParams:  # group names: checked by the features stage's FeatureSpec
        if not self.groups or not all(self.groups):
            raise ValueError(f"groups: each candidate a non-empty list of feature groups, got {self.groups}")
        if not self.important_weights or min(self.important_weights) <= 0:
            raise ValueError(f"important_weights must be positive, got {self.important_weights}")
        return self


class TrainParams(Section):
    c_grid: list[float] = [1.0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7]
    target_recall: float = Field(default=0.9, gt=0, le=1)
    # recall: the threshold that flags target_recall of the important tokens on validation rows.
    # accuracy: decode the task's calibration split at thresholds between recall 1.0 and target_recall
    # and keep the largest whose accuracy drop vs target greedy is within accuracy_budget.
    threshold_policy: Literal["recall", "accuracy"] = "recall"
    accuracy_budget: float = Field(default=0.005, ge=0, lt=1)
    calibration_split: str = "validation"
    calibration_limit: PositiveInt | None = None
    calibration_points: int = Field(default=6, ge=2)
    validation_fraction: float = Field(default=0.2, gt=0, lt=1)
    folds: PositiveInt = 5
    seed: int = 0
    # held_out: mine mining.split, evaluate on another split. out_of_fold: for tasks without a training
    # split (HumanEval, LiveCodeBench), mine the evaluated split and decode each of its problems with a
    # head trained on the other out_of_fold_folds - 1 folds (heads/out_of_fold.py)
    protocol: Literal["held_out", "out_of_fold"] = "held_out"
    out_of_fold_folds: int = Field(default=5, ge=2)
    context: ContextHeadParams = ContextHeadParams()


class SelfJudgeParams(Section):
    """SelfJudge labels: semantic preservation scores of mismatches under the target."""

    enabled: bool = True
    # mined: AutoJudge's mined mismatches; responses: checker-free, every draft mismatch in the target's
    # greedy responses to the mining split's prompts (no answers; tau set or calibrated on a mined subset)
    candidates: Literal["mined", "responses"] = "responses"
    engine: Literal["vllm", "hf"] = (
        "vllm"  # generates the target's responses and suffixes (scores: packed hf)
    )
    problems: PositiveInt | None = None  # first N problems (null: as many as AutoJudge mines)
    n_next: int = Field(default=20, ge=0)  # N: target tokens after the mismatch in the score
    tau: float | None = None  # label threshold; null: calibrated on AutoJudge's labels
    calibration_problems: PositiveInt = 100  # first N relabeled problems used to calibrate tau
    # tau: the lowest that labels this share of AutoJudge-important mismatches important (s <= tau)
    calibration_recall: float = Field(default=0.9, gt=0, le=1)
    batch_size: PositiveInt = 32  # hf engine
