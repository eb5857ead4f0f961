"""Training an EAGLE head on a target's teacher-forced hidden states: seeded, resumable, early-stopped.

The loss of a position is the cross-entropy of the head's logits against the target's next-token
distribution (soft labels: the target's LM head on its next hidden state) plus, as in EAGLE, a
smooth-L1 regression of that next hidden state (the head's output feeds its next draft in vLLM).
The loop is :func:`autojudge.models.early_stopping.train_early_stopped`: its state (``checkpoint.pt``,
``curve.json``) and ``head/`` (the best head by held-out agreement, loadable by vLLM; stage eagle saves it
elsewhere, so that DVC can keep the training state apart from the head) live under one directory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch.nn import functional
from transformers import PreTrainedModel

from autojudge.errors import InputError
from autojudge.models.eagle import EagleExamples, EagleHead, agreement, new_head, save_head
from autojudge.models.early_stopping import Schedule, train_early_stopped

HEAD = "head"


@dataclass(frozen=True)
class EagleTraining:
    """Settings of one training run; a checkpoint resumes only under the same settings."""

    max_steps: int = 2000
    batch_size: int = 16
    learning_rate: float = 1e-3
    regression_weight: float = 1.0
    noise: float = 0.0  # EAGLE's uniform noise on the input hidden states, U(-noise, noise)
    eval_every: int = 50
    checkpoint_every: int = 50
    patience: int = 5  # evaluations without a better held-out agreement before stopping
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("max_steps", "batch_size", "eval_every", "checkpoint_every", "patience"):
            if getattr(self, name) < 1:
                raise InputError(f"eagle training: {name} must be at least 1, got {getattr(self, name)}")
        if self.learning_rate <= 0 or self.regression_weight < 0 or self.noise < 0:
            raise InputError("eagle training: learning_rate must be > 0, regression_weight and noise >= 0")


def _loss(
    head: EagleHead, batch: tuple[torch.Tensor, ...], settings: EagleTraining, generator: torch.Generator
) -> torch.Tensor:
    """Soft-label cross-entropy against the target's next-token distribution + weighted smooth-L1."""
    tokens, hidden_in, hidden_next, scored = batch
    if settings.noise:
        hidden_in = hidden_in + settings.noise * (2 * torch.rand(hidden_in.shape, generator=generator) - 1)
    out = head(tokens, hidden_in)[scored]
    wanted = hidden_next[scored]
    with torch.no_grad():
        labels = torch.softmax(head.logits(wanted), dim=-1)
    cross_entropy = -(labels * torch.log_softmax(head.logits(out), dim=-1)).sum(-1).mean()
    return cross_entropy + settings.regression_weight * functional.smooth_l1_loss(out, wanted)


class _HeadTrainee:
    """An EAGLE head as the early-stopping loop trains it."""

    def __init__(
        self, head: EagleHead, train: EagleExamples, held_out: EagleExamples, settings: EagleTraining
    ) -> None:
        self.head, self.rows, self.held_out, self.settings = head, train, held_out, settings

    def parameters(self) -> Iterable[torch.nn.Parameter]:
        return self.head.parameters()

    def loss(self, generator: torch.Generator) -> torch.Tensor:
        picked = torch.randint(len(self.rows), (self.settings.batch_size,), generator=generator).tolist()
        return _loss(self.head, self.rows.batch(picked), self.settings, generator)

    def agreement(self) -> float:
        return agreement(self.head, self.held_out)

    def weights(self) -> dict[str, torch.Tensor]:
        return self.head.weights()

    def load_weights(self, weights: dict[str, torch.Tensor]) -> None:
        self.head.load_state_dict(weights)

    def train(self, mode: bool = True) -> object:
        return self.head.train(mode)


def train_head(
    target: PreTrainedModel,
    train: EagleExamples,
    held_out: EagleExamples,
    settings: EagleTraining,
    out: Path,
    head_out: Path | None = None,
) -> tuple[EagleHead, dict]:
    """Train (or resume, or read back) a head for ``target`` under ``out``; the best head and its curve.

    The best head is saved to ``head_out`` (default ``out/head``)."""
    if not len(train) or not held_out.positions():
        raise InputError("eagle training needs training rows and scored held-out positions")
    rows = [len(train), train.positions(), len(held_out), held_out.positions()]
    head = new_head(target, settings.seed)
    optimizer = torch.optim.AdamW(head.parameters(), lr=settings.learning_rate, weight_decay=0.0)
    generator = torch.Generator().manual_seed(settings.seed)
    schedule = Schedule(settings.max_steps, settings.eval_every, settings.checkpoint_every, settings.patience)
    trainee = _HeadTrainee(head, train, held_out, settings)
    record = {"settings": asdict(settings), "rows": rows}
    curve = train_early_stopped(trainee, optimizer, generator, schedule, record, out, "eagle")
    save_head(head, Path(out) / HEAD if head_out is None else Path(head_out))
    return head, curve
