"""Rule names, their keys and the ranges of their values: what a user writes to pick a rule.

The same names and keys serve ``params.yaml`` (compare), ``autojudge eval``, the plugin's
``additional_config["autojudge"]`` and a request's flat ``vllm_xargs`` (``autojudge_<key>``):

==========================================  =============================================================
rule                                        keys
==========================================  =============================================================
``exact``                                   (lossless)
``topk``                                    ``top_k`` >= 1
``judge``, ``selfjudge``                    a head; ``threshold`` in [0, 1] on p(important), default the head's
``fsd-js``, ``fsd-kl``, ``fsd-tv``          ``threshold`` on the divergence (JS <= ln 2, TV <= 1); match-or
``fsd-{js,kl,tv}-published``                the same, as published (a match is decided too)
``kl-mask``                                 ``threshold`` on KL, ``confidence`` in (0, 1]
``target-entropy``, ``draft-entropy``       ``threshold`` on the entropy (nats)
``fly``                                     ``threshold`` (vLLM's ``fly_entropy_threshold``), ``fly_window_size``
                                            in [1, K - 1] (default min(6, K - 1)), ``fly_entropy_top_k`` >= 1
==========================================  =============================================================

Nothing here imports torch: vLLM's frontend validates requests with it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from autojudge.errors import InputError

HEADS = ("judge", "judge-context", "selfjudge")  # judge-context: the context head (train.context)
DIVERGENCES = ("js", "kl", "tv")
FSD = tuple(f"fsd-{d}" for d in DIVERGENCES)
FSD_PUBLISHED = tuple(f"{name}-published" for name in FSD)
TRAINING_FREE = (*FSD, *FSD_PUBLISHED, "kl-mask", "target-entropy", "draft-entropy", "fly")
RULES = ("exact", "topk", *HEADS, *TRAINING_FREE)
COMPARED_RULES = (*TRAINING_FREE, "topk")  # the comparison's rules besides the heads (need no training)
NEEDS_DRAFT_LOGITS = (*FSD, *FSD_PUBLISHED, "kl-mask", "draft-entropy")
THRESHOLD_BOUNDS = {  # (low, high) of a rule's threshold; absent: [0, inf)
    **dict.fromkeys(HEADS, (0.0, 1.0)),
    **dict.fromkeys(("fsd-tv", "fsd-tv-published"), (0.0, 1.0)),
    **dict.fromkeys(("fsd-js", "fsd-js-published"), (0.0, math.log(2))),
}
RULE_KEYS = {  # the keys each rule reads besides its name
    "exact": (),
    "topk": ("top_k",),
    **dict.fromkeys(HEADS, ("threshold",)),
    **dict.fromkeys(TRAINING_FREE, ("threshold",)),
    "kl-mask": ("threshold", "confidence"),
    "fly": ("threshold", "fly_window_size", "fly_entropy_top_k"),
}
FLY_DEFAULT_WINDOW = 6  # vLLM upstream: fly_window_size defaults to min(6, K - 1)


@dataclass(frozen=True)
class RuleConfig:
    """A rule by name with its keys; invalid names or values raise ``InputError`` naming them."""

    rule: str
    threshold: float | None = None
    top_k: int | None = None
    confidence: float = 0.9
    fly_window_size: int | None = None
    fly_entropy_top_k: int = 3

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise InputError(f"autojudge: unknown rule {self.rule!r}; expected one of {', '.join(RULES)}")
        keys = RULE_KEYS[self.rule]
        if "top_k" in keys and (self.top_k is None or self.top_k < 1):
            raise InputError(f"autojudge: rule 'topk' needs top_k >= 1, got {self.top_k}")
        if self.threshold is not None and not math.isfinite(self.threshold):
            raise InputError(f"autojudge: threshold must be finite, got {self.threshold}")
        if self.rule in TRAINING_FREE and self.threshold is None:
            raise InputError(f"autojudge: rule {self.rule!r} needs a threshold")
        if "threshold" in keys and self.threshold is not None:
            low, high = THRESHOLD_BOUNDS.get(self.rule, (0.0, math.inf))
            if not low <= self.threshold <= high:
                raise InputError(
                    f"autojudge: rule {self.rule!r} needs a threshold in [{low:g}, {high:g}], got {self.threshold}"
                )
        if "confidence" in keys and not 0 < self.confidence <= 1:
            raise InputError(f"autojudge: kl-mask confidence must be in (0, 1], got {self.confidence}")
        if "fly_entropy_top_k" in keys and self.fly_entropy_top_k < 1:
            raise InputError(f"autojudge: fly_entropy_top_k must be positive, got {self.fly_entropy_top_k}")
        if "fly_window_size" in keys and self.fly_window_size is not None and self.fly_window_size < 1:
            raise InputError(f"autojudge: fly_window_size must be at least 1, got {self.fly_window_size}")

    @property
    def needs_head(self) -> bool:
        return self.rule in HEADS

    @property
    def needs_draft_logits(self) -> bool:
        return self.rule in NEEDS_DRAFT_LOGITS

    def keys(self) -> dict[str, Any]:
        """The rule's name and the keys it reads that are set: what serves it elsewhere."""
        return {
            "rule": self.rule,
            **{k: getattr(self, k) for k in RULE_KEYS[self.rule] if getattr(self, k) is not None},
        }

    def describe(self) -> str:
        values = ", ".join(
            f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}"
            for key, value in self.keys().items()
            if key != "rule"
        )
        return f"{self.rule}({values})" if values else self.rule


def fly_window(window_size: int | None, num_speculative_tokens: int) -> int:
    """FLy's window for K = ``num_speculative_tokens``, as vLLM upstream resolves and checks it."""
    if num_speculative_tokens < 2:
        raise InputError(f"autojudge: fly needs at least 2 speculative tokens, got {num_speculative_tokens}")
    size = min(FLY_DEFAULT_WINDOW, num_speculative_tokens - 1) if window_size is None else window_size
    if not 1 <= size < num_speculative_tokens:
        raise InputError(
            f"autojudge: fly_window_size must be in [1, {num_speculative_tokens - 1}] (smaller than "
            f"num_speculative_tokens {num_speculative_tokens}), got {size}"
        )
    return size


CONVERTERS = {
    "rule": str,
    "threshold": float,
    "top_k": int,
    "confidence": float,
    "fly_window_size": int,
    "fly_entropy_top_k": int,
}


def parse_values(raw: Mapping[str, Any], allowed: tuple[str, ...], origin: str) -> dict[str, Any]:
    """Typed values of the keys of ``raw`` (empty strings and None count as unset)."""
    unknown = set(raw) - set(allowed)
    if unknown:
        raise InputError(f"autojudge: unknown keys {sorted(unknown)} in {origin}; allowed: {list(allowed)}")
    try:
        return {key: CONVERTERS.get(key, str)(value) for key, value in raw.items() if value not in (None, "")}
    except (TypeError, ValueError) as exc:
        raise InputError(f"autojudge: bad value in {origin}: {exc}") from exc


RULE_FIELDS = tuple(f.name for f in fields(RuleConfig))
Config = TypeVar("Config", bound=RuleConfig)


def rule_config(raw: Mapping[str, Any], origin: str, kind: type[Config] = RuleConfig) -> Config:
    """A ``kind`` (RuleConfig or a subclass) from a mapping of its field names."""
    if not isinstance(raw, Mapping):
        raise InputError(f"autojudge: {origin} must be a dict, got {type(raw).__name__}")
    values = parse_values(raw, tuple(f.name for f in fields(kind)), origin)
    if "rule" not in values:
        raise InputError(f"autojudge: {origin} must name a 'rule'")
    return kind(**values)
