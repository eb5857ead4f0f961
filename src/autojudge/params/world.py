"""The toy world (``toy``): the arith task's data splits and the training of the toy draft/target pair."""

# ruff: noqa: RUF012 - pydantic copies mutable field defaults per instance; ruff only recognises a model
# whose pydantic base is in the same file (Section is in params.base)

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt

from autojudge.params.base import Section


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
