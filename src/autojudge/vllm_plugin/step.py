"""One verification step's context: what the runner opens and the patched ``rejection_sample`` decides with."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class StepContext:
    """What one verification step decides with beyond vLLM's own arguments."""

    rules: list[Any]  # the distinct AcceptanceRules of this step's requests
    rule_of_row: torch.Tensor | None  # [N] index into rules per draft row (None: one rule)
    target_hidden: torch.Tensor  # [N, H] target hidden state at each draft token's position
    context_hidden: torch.Tensor  # [N, H] target hidden state that produced each draft row's logits
    draft_logits: torch.Tensor | None  # [N, V] drafter logits each draft token was chosen from
    drafted: torch.Tensor  # [N] bool: a draft the drafter produced this step (not a placeholder)
    decided: bool = False  # set by the patched rejection_sample
    lossy: torch.Tensor | None = None  # [B] lossy accepts per request, set by the patched rejection_sample


ACTIVE: ContextVar[StepContext | None] = ContextVar("autojudge_step", default=None)
