"""Acceptance rules: which mismatching draft tokens verification may accept anyway.

A rule sees one window of W draft tokens with what both models computed for it and
returns, per position, whether a mismatch there may be accepted. Matching tokens are
accepted (unless the rule decides them too, ``keeps_matches`` False); verification stops
at the first position that is not accepted.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch

from autojudge.heads.artifact import JudgeHead


@dataclass(frozen=True)
class Window:
    """One speculation window as verification sees it (row i is draft position i)."""

    draft_tokens: torch.Tensor  # [W] token ids proposed by the draft
    target_logits: torch.Tensor  # [W, V] target logits for each draft position
    draft_logits: torch.Tensor | None  # [W, V] draft logits each draft token was chosen from (None: not kept)
    target_hidden: torch.Tensor  # [W, H] target last-layer state at each draft token (encodes it)
    draft_hidden: torch.Tensor | None = None  # [W, Hd] same for the draft, when the rule asks for it
    # rows of several requests (the vLLM plugin): inclusive cumsum of their draft counts; None: one request
    cu_num_draft_tokens: torch.Tensor | None = None

    @property
    def target_tokens(self) -> torch.Tensor:
        return self.target_logits.argmax(dim=-1)


class AcceptanceRule(ABC):
    """Decides which mismatching draft tokens to accept."""

    name: str
    needs_draft_hidden: bool = False
    reads_draft_logits: bool = False  # decides from the drafter's logits (Window.draft_logits)
    keeps_matches: bool = True  # False: the rule's decision holds at matching positions too

    @abstractmethod
    def accept_mismatch(self, window: Window) -> torch.Tensor:
        """[W] bool: accept position i even if the draft token differs from the target's choice (with
        ``keeps_matches`` False: whether to accept position i at all)."""

    def describe(self) -> str:
        return self.name


def accepted_count(rule: AcceptanceRule, window: Window) -> tuple[int, int]:
    """Leading positions verification accepts, and how many of them are accepted mismatches."""
    matches = window.draft_tokens == window.target_tokens
    decided = rule.accept_mismatch(window)
    accepted = matches | decided if rule.keeps_matches else decided
    rejected = torch.nonzero(~accepted)
    count = int(rejected[0, 0]) if len(rejected) else len(accepted)
    return count, int((~matches[:count]).sum())


class ExactMatch(AcceptanceRule):
    """Lossless greedy speculative decoding: accept a draft token only if the target agrees."""

    name = "exact"

    def accept_mismatch(self, window: Window) -> torch.Tensor:
        return torch.zeros_like(window.draft_tokens, dtype=torch.bool)


class TopK(AcceptanceRule):
    """Accept a draft token within the target's K most likely tokens (AutoJudge's top-K baseline)."""

    name = "topk"

    def __init__(self, k: int) -> None:
        if k < 1:
            raise ValueError(f"top-K needs k >= 1, got {k}")
        self.k = k

    def accept_mismatch(self, window: Window) -> torch.Tensor:
        k = min(self.k, window.target_logits.shape[-1])
        top = window.target_logits.topk(k, dim=-1).indices
        return (top == window.draft_tokens.unsqueeze(-1)).any(dim=-1)

    def describe(self) -> str:
        return f"topk(k={self.k})"


class JudgeRule(AcceptanceRule):
    """AutoJudge: accept a mismatching draft token when the head's p(important) is below the threshold."""

    name = "judge"

    def __init__(self, head: JudgeHead, threshold: float | None = None) -> None:
        self.head = head
        self.threshold = head.threshold if threshold is None else threshold
        self.needs_draft_hidden = head.features.source != "target"

    def accept_mismatch(self, window: Window) -> torch.Tensor:
        features = self.head.features.combine(window.target_hidden, window.draft_hidden)
        return self.head.probability(features) < self.threshold

    def describe(self) -> str:
        return f"judge(threshold={self.threshold:.4g})"
