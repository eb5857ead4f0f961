"""A distilled draft committed small: LoRA adapters on the target's first layers (issue 37's depth sweep).

Stage distill trains every weight of the kept layers for a fixed number of steps: a 12-layer draft of
SmolLM2 would be 42M trained parameters, too large to commit and hours to reproduce. Here the kept layers
stay the target's and only low-rank adapters on their projections learn (:mod:`autojudge.models.lora`;
about 2M parameters for 12 layers at rank 16), on the target's greedy responses (the same sequence-level
distillation loss, :func:`autojudge.models.distill.response_loss`), until teacher-forced agreement on
held-out responses stops improving (:mod:`autojudge.models.early_stopping`). The best adapter is saved with
what made it; :func:`adapted_draft` rebuilds the draft from the target and the adapter (the adapter merged
into the kept layers: a plain checkpoint any engine loads).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from transformers import PreTrainedModel

from autojudge.errors import InputError
from autojudge.io import atomic_path
from autojudge.models.batches import padded_batch
from autojudge.models.distill import agreement, response_loss, truncated_draft
from autojudge.models.early_stopping import Schedule, train_early_stopped
from autojudge.models.lora import adapter_state, add_lora, load_adapter_state, merge_adapter

Row = tuple[list[int], list[int]]


@dataclass(frozen=True)
class DraftTraining:
    """Settings of one draft's training; a checkpoint resumes only under the same settings."""

    layers: int
    rank: int = 16
    alpha: float = 32.0
    max_steps: int = 2000
    batch_size: int = 16
    learning_rate: float = 1e-3
    eval_every: int = 50
    checkpoint_every: int = 50
    patience: int = 4  # evaluations without a better held-out agreement before stopping
    seed: int = 0
    bf16_autocast: bool = False  # bfloat16 matrix products: about 2x on CPUs with AVX512-BF16 or AMX

    def __post_init__(self) -> None:
        names = ("layers", "rank", "max_steps", "batch_size", "eval_every", "checkpoint_every", "patience")
        for name in names:
            if getattr(self, name) < 1:
                raise InputError(f"draft training: {name} must be at least 1, got {getattr(self, name)}")
        if self.learning_rate <= 0 or self.alpha <= 0:
            raise InputError("draft training: learning_rate and alpha must be > 0")


class _DraftTrainee:
    """A truncated draft wrapped with adapters, as the early-stopping loop trains it."""

    def __init__(
        self, draft: PreTrainedModel, train: list[Row], held_out: list[Row], pad: int, settings: DraftTraining
    ) -> None:
        self.draft, self.rows, self.held_out, self.pad = draft, train, held_out, pad
        self.batch_size, self.bf16 = settings.batch_size, settings.bf16_autocast
        self.trained = add_lora(draft, settings.rank, settings.alpha)

    def parameters(self) -> Iterable[torch.nn.Parameter]:
        return self.trained

    def loss(self, generator: torch.Generator) -> torch.Tensor:
        picked = torch.randint(len(self.rows), (self.batch_size,), generator=generator).tolist()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            return response_loss(self.draft, *padded_batch([self.rows[i] for i in picked], self.pad))

    def agreement(self) -> float:
        return agreement(self.draft, self.draft.config.vocab_size, self.pad, self.held_out)

    def weights(self) -> dict[str, torch.Tensor]:
        return adapter_state(self.draft)

    def load_weights(self, weights: dict[str, torch.Tensor]) -> None:
        load_adapter_state(self.draft, weights)

    def train(self, mode: bool = True) -> object:
        return self.draft.train(mode)


def train_draft_adapter(
    target: PreTrainedModel,
    train: list[Row],
    held_out: list[Row],
    settings: DraftTraining,
    pad_token_id: int,
    out: Path,
) -> tuple[dict[str, torch.Tensor], dict]:
    """Train (or resume, or read back) the adapter of a ``settings.layers``-layer draft under ``out``; the
    best adapter's tensors and the curve."""
    train, held_out = [r for r in train if r[1]], [r for r in held_out if r[1]]
    if not train or not held_out:
        raise InputError("draft training needs training and held-out rows with responses")
    torch.manual_seed(settings.seed)
    trainee = _DraftTrainee(truncated_draft(target, settings.layers), train, held_out, pad_token_id, settings)
    optimizer = torch.optim.AdamW(trainee.trained, lr=settings.learning_rate, weight_decay=0.0)
    generator = torch.Generator().manual_seed(settings.seed)
    schedule = Schedule(settings.max_steps, settings.eval_every, settings.checkpoint_every, settings.patience)
    rows = [len(train), sum(len(r) for _, r in train), len(held_out), sum(len(r) for _, r in held_out)]
    record = {"settings": asdict(settings), "rows": rows}
    curve = train_early_stopped(
        trainee, optimizer, generator, schedule, record, out, f"draft-{settings.layers}"
    )
    return trainee.weights(), curve


def save_adapter(path: Path, weights: dict[str, torch.Tensor], settings: DraftTraining) -> None:
    """The adapter's tensors with the settings that made it (safetensors metadata), written atomically."""
    with atomic_path(path) as temporary:
        save_file(weights, str(temporary), metadata={"training": json.dumps(asdict(settings))})


def read_adapter(path: Path) -> tuple[dict[str, torch.Tensor], DraftTraining]:
    """A saved adapter and its settings."""
    if not Path(path).is_file():
        raise InputError(f"{path}: no draft adapter")
    with safe_open(str(path), "pt") as file:
        metadata = file.metadata() or {}
    if "training" not in metadata:
        raise InputError(
            f"{path} is not a draft adapter written by lora_draft.save_adapter (no training settings)"
        )
    return load_file(str(path)), DraftTraining(**json.loads(metadata["training"]))


def adapted_draft(target: PreTrainedModel, adapter: Path) -> PreTrainedModel:
    """The draft of a saved adapter: the target's first layers with the adapter merged into them."""
    weights, settings = read_adapter(adapter)
    draft = truncated_draft(target, settings.layers)
    merge_adapter(draft, weights, settings.alpha)
    draft.generation_config = target.generation_config
    return draft.eval()
