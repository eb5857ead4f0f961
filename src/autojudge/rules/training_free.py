"""Acceptance rules that need no training: divergence, confidence and entropy thresholds.

Each rule reads only the two models' next-token logits of the window, so it costs nothing to
mine or train; the comparison stage weighs them against the trained judge heads.
"""

from __future__ import annotations

import math

import torch

from autojudge.errors import InputError
from autojudge.rules.acceptance import AcceptanceRule, Window
from autojudge.rules.divergence import DIVERGENCES, entropy, kl_divergence, top1_probability


class FuzzyRule(AcceptanceRule):
    """Fuzzy Speculative Decoding (FSD): accept when divergence(target, draft) < T (JS default, KL or TV).

    Two variants: match-or (default) accepts a matching draft token whatever the divergence; as
    published (``published``), a position is accepted iff its divergence is below T, so a match with a
    large divergence is rejected. In greedy decoding the rejected match's correction is the target's
    argmax, the very draft token, so both variants emit the same tokens; the published one spends more
    target passes on them (tests/rules/test_training_free.py).
    """

    reads_draft_logits = True

    def __init__(self, threshold: float, divergence: str = "js", published: bool = False) -> None:
        if divergence not in DIVERGENCES:
            raise InputError(f"unknown divergence {divergence!r}; known: {', '.join(DIVERGENCES)}")
        self.threshold = threshold
        self.divergence = divergence
        self.keeps_matches = not published
        self.name = f"fsd-{divergence}" + ("-published" if published else "")

    def score(self, window: Window) -> torch.Tensor:
        return DIVERGENCES[self.divergence](window.target_logits, window.draft_logits)

    def accept_mismatch(self, window: Window) -> torch.Tensor:
        return self.score(window) < self.threshold

    def describe(self) -> str:
        return f"{self.name}(T={self.threshold:.4g})"


class KLMaskRule(AcceptanceRule):
    """Training-free judge decoding via KL: accept when KL < T unless the target's top-1 p > confidence."""

    name = "kl-mask"
    reads_draft_logits = True

    def __init__(self, threshold: float, confidence: float = 0.9) -> None:
        if not 0 < confidence <= 1:
            raise InputError(f"kl-mask confidence must be in (0, 1], got {confidence}")
        self.threshold = threshold
        self.confidence = confidence

    def score(self, window: Window) -> torch.Tensor:
        """KL(target || draft); +inf where the target's top-1 p > confidence (exact verification there)."""
        divergence = kl_divergence(window.target_logits, window.draft_logits)
        confident = top1_probability(window.target_logits) > self.confidence
        return torch.where(confident, torch.full_like(divergence, math.inf), divergence)

    def accept_mismatch(self, window: Window) -> torch.Tensor:
        return self.score(window) < self.threshold

    def describe(self) -> str:
        return f"kl-mask(T={self.threshold:.4g}, top1<={self.confidence:g})"


class EntropyRule(AcceptanceRule):
    """Target-/Draft-Entropy baselines of the KL-thresholding paper: accept when entropy > T.

    Direction: a high entropy marks a position where the model spreads its mass over several
    continuations, the situation in which a different token is most likely a harmless
    alternative; a confident (low-entropy) model is verified exactly. This is the uncertainty
    gate the KL paper's confidence mask also rests on, applied to one model's distribution.
    """

    negated_score = True  # accept iff entropy > T

    def __init__(self, threshold: float, source: str = "target") -> None:
        if source not in ("target", "draft"):
            raise InputError(f"entropy rule source must be target or draft, got {source!r}")
        self.threshold = threshold
        self.source = source
        self.name = f"{source}-entropy"
        self.reads_draft_logits = source == "draft"

    def score(self, window: Window) -> torch.Tensor:
        """The negated entropy (lower: more spread out, accepted first)."""
        return -entropy(window.target_logits if self.source == "target" else window.draft_logits)

    def accept_mismatch(self, window: Window) -> torch.Tensor:
        return self.score(window) < -self.threshold

    def describe(self) -> str:
        return f"{self.name}(T={self.threshold:.4g})"
