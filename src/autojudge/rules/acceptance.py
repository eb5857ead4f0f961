"""Acceptance rules: which draft tokens that verification rejects it may accept anyway.

A rule sees one window of W draft tokens with what both models computed for it and
returns, per position, whether a rejected draft token there may be accepted. Greedy verification
rejects a mismatch (draft != target argmax); sampled verification rejects where the standard test
fails (u > p(x) for a greedy draft; ``Window.native``). Natively accepted tokens stay accepted
(in greedy decoding, unless the rule decides them too, ``keeps_matches`` False); a token the target
cannot emit (p(x) = 0: a -inf processed logit) is never accepted; verification stops at the first
position that is not accepted. The decision itself is ``rules.verification``, one implementation for the
reference engines and the vLLM plugin.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property

import torch

from autojudge.features.groups import FeatureInputs
from autojudge.heads.artifact import JudgeHead
from autojudge.rules.verdict import greedy_choice, greedy_verdict


@dataclass(frozen=True)
class Window:
    """One speculation window as verification sees it (row i is draft position i)."""

    draft_tokens: torch.Tensor  # [W] token ids proposed by the draft
    target_logits: torch.Tensor  # [W, V] target logits for each draft position
    draft_logits: torch.Tensor | None  # [W, V] draft logits each draft token was chosen from (None: not kept)
    target_hidden: torch.Tensor  # [W, H] target last-layer state at each draft token (encodes it)
    draft_hidden: torch.Tensor | None = None  # [W, Hd] same for the draft, when the rule asks for it
    context_hidden: torch.Tensor | None = None  # [W, H] target state that predicted each row's logits
    # rows of several requests (the vLLM plugin): inclusive cumsum of their draft counts; None: one request
    cu_num_draft_tokens: torch.Tensor | None = None
    # [W] bool: the standard test's verdict under sampling (u <= p(x)); None: greedy (draft == argmax)
    native: torch.Tensor | None = None
    # [W] bool: which rows are sampled (a batch mixing greedy and sampled requests); None: every row is
    # sampled if ``native`` is given, none otherwise
    sampled: torch.Tensor | None = None

    @cached_property
    def target_tokens(self) -> torch.Tensor:
        """[W] the target's greedy token at each row (computed once per window)."""
        return greedy_choice(self.target_logits)

    @cached_property
    def natively_accepted(self) -> torch.Tensor:
        """[W] bool: what lossless verification accepts (placeholder drafts < 0 never)."""
        if self.native is not None:
            return self.native & (self.draft_tokens >= 0)
        return greedy_verdict(self.draft_tokens, self.target_tokens)

    def sampled_rows(self) -> torch.Tensor:
        """[W] bool: rows verified by the standard test of speculative sampling."""
        if self.sampled is not None:
            return self.sampled
        return torch.full_like(self.draft_tokens, self.native is not None, dtype=torch.bool)

    @property
    def allowed(self) -> torch.Tensor:
        """[W] bool: the target can emit the draft token (finite processed logit; p(x) > 0)."""
        draft = self.draft_tokens.long()
        logit = self.target_logits.gather(-1, draft.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        return torch.isfinite(logit) & (draft >= 0)


class AcceptanceRule(ABC):
    """Decides which mismatching draft tokens to accept."""

    name: str
    needs_draft_hidden: bool = False
    reads_draft_logits: bool = False  # decides from the drafter's logits (Window.draft_logits)
    keeps_matches: bool = True  # False: the rule's decision holds at matching positions too
    negated_score: bool = False  # ``score`` is minus the quantity the threshold bounds from below

    @classmethod
    def threshold_at(cls, cut: float) -> float:
        """The threshold that accepts exactly the mismatches whose ``score`` is below ``cut``."""
        return max(0.0, -cut) if cls.negated_score else cut

    @classmethod
    def score_cut(cls, threshold: float) -> float:
        """The inverse of ``threshold_at``: the score below which the rule at ``threshold`` accepts."""
        return -threshold if cls.negated_score else threshold

    @abstractmethod
    def accept_mismatch(self, window: Window) -> torch.Tensor:
        """[W] bool: accept position i even if the draft token differs from the target's choice (with
        ``keeps_matches`` False: whether to accept position i at all)."""

    def score(self, window: Window) -> torch.Tensor:
        """[W] the score the rule thresholds, oriented so that lower scores are accepted first (the
        comparison's grids place their thresholds on it, ``evaluation.grids``)."""
        raise NotImplementedError(f"rule {self.name} accepts by no score")

    def acceptance_probability(self, window: Window) -> torch.Tensor:
        """[W] float: the probability that the rule accepts position i if lossless verification rejects
        it (a deterministic rule: 0 or 1; the distribution shift it causes is measured with it)."""
        return (self.accept_mismatch(window) & window.allowed).float()

    def describe(self) -> str:
        return self.name


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

    @classmethod
    def score_cut(cls, threshold: float) -> float:
        """Top-K at K accepts ranks below K + 1."""
        return threshold + 1

    def score(self, window: Window) -> torch.Tensor:
        """The draft token's rank among the target's logits (1: its top token; ties share the best rank)."""
        chosen = window.target_logits.gather(-1, window.draft_tokens.long().clamp(min=0).unsqueeze(-1))
        return (window.target_logits > chosen).sum(dim=-1).float() + 1

    def accept_mismatch(self, window: Window) -> torch.Tensor:
        return self.score(window) < self.k + 1

    def describe(self) -> str:
        return f"topk(k={self.k})"


class JudgeRule(AcceptanceRule):
    """AutoJudge: accept a mismatching draft token when the head's p(important) is below the threshold."""

    name = "judge"

    def __init__(self, head: JudgeHead, threshold: float | None = None) -> None:
        self.head = head
        self.threshold = head.threshold if threshold is None else threshold
        self.needs_draft_hidden = "draft" in head.features.reads

    def score(self, window: Window) -> torch.Tensor:
        """The head's p(important), from its feature groups (``autojudge.features.groups``)."""
        classes = "token_classes" in self.head.features.groups
        inputs = FeatureInputs(
            window.draft_tokens,
            window.target_hidden,
            window.draft_hidden,
            window.context_hidden,
            window.target_logits,
            target_tokens=window.target_tokens if classes else None,
        )
        return self.head.judge(inputs)

    def accept_mismatch(self, window: Window) -> torch.Tensor:
        return self.score(window) < self.threshold

    def describe(self) -> str:
        return f"judge(threshold={self.threshold:.4g})"
