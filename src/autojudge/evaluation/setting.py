"""One way of decoding a split, as plain data: what sweeps, grids and the comparison pass around."""

from __future__ import annotations

from dataclasses import dataclass

from autojudge.params import CompareParams
from autojudge.rules.config import RuleConfig

ALONE = ("target", "draft")  # one model, greedy


@dataclass(frozen=True)
class Setting:
    """One way of decoding: ``method`` is target or draft (one model, greedy) or a rule of the registry
    (``autojudge.rules.config.RULES``: exact, topk, a head, a training-free rule)."""

    method: str
    window: int = 0
    k: int = 0
    threshold: float = 0.0
    recall: float | None = None  # the validation recall the judge threshold was chosen for
    rate: float | None = None  # the validation acceptance rate of mismatches it was placed at (grids)
    head: str | None = None  # a head rule's head other than the method's own: "<task>" (crossdomain)

    @property
    def head_key(self) -> str:
        """Which head file a head rule reads: the method's (judge, selfjudge) or "<task> head"."""
        return f"{self.head} head" if self.head else self.method

    @property
    def name(self) -> str:
        if self.method in ("target", "draft"):
            return f"{self.method} alone"
        if self.method == "exact":
            return f"exact SD W={self.window}"
        if self.method == "topk":
            return f"top-{self.k} W={self.window}"
        return f"{self.head_key} t={self.threshold:.4g} W={self.window}"

    def rule_config(self, compare: CompareParams) -> RuleConfig:
        """The registry's config of this setting (kl-mask's confidence and FLy's keys from ``compare``)."""
        return RuleConfig(
            self.method,
            threshold=None if self.method in ("exact", "topk") else self.threshold,
            top_k=self.k if self.method == "topk" else None,
            confidence=compare.confidence,
            fly_window_size=compare.fly_window_size,
            fly_entropy_top_k=compare.fly_entropy_top_k,
        )
