"""Which features a judge head reads: the contract between a head and the engines that feed it.

A head reads one or more feature groups, concatenated in this order:

=================  ==================================================================================
``token_state``    the last-layer hidden state reading the draft token (the paper's feature), from the
                   target, the draft or both (``source``)
``context_state``  the target's hidden state that predicted the draft token's slot (what it wanted)
``rule_scores``    the free rules' scores from the target's logits at the slot: log p(draft token),
                   log p(top-1), their gap, entropy, log(1 + rank of the draft token)
``token_classes``  one-hot class (digit, space, punctuation, word) of the draft and the target token
=================  ==================================================================================

Every group but ``token_state`` reads what the target computed in the verification step itself, so any
proposer supplies it. Nothing beyond the standard library at import: the vLLM plugin and the
verification core load heads without the mining stack (:mod:`autojudge.features.groups` computes them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from autojudge.errors import InputError

FeatureSource = Literal["target", "draft", "both"]
GROUPS = ("token_state", "context_state", "rule_scores", "token_classes")
PAPER_GROUPS = ("token_state",)  # the paper's head: the hidden state reading the draft token
RULE_SCORES = 5
TOKEN_CLASSES = ("digit", "space", "punctuation", "word")


def ordered_groups(*candidates: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Every group named in ``candidates``, in ``GROUPS`` order (an unknown name raises ``InputError``)."""
    named = {group for candidate in candidates for group in candidate}
    unknown = sorted(named - set(GROUPS))
    if unknown:
        raise InputError(f"feature groups {unknown}: each must be one of {list(GROUPS)}")
    return tuple(group for group in GROUPS if group in named)


@dataclass(frozen=True)
class FeatureSpec:
    """Which feature groups a judge head reads, and the hidden sizes they come from."""

    source: FeatureSource
    target_hidden_size: int
    draft_hidden_size: int
    groups: tuple[str, ...] = PAPER_GROUPS

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", tuple(self.groups))  # JSON gives a list
        unknown = [group for group in self.groups if group not in GROUPS]
        if unknown or not self.groups:
            raise InputError(f"feature groups {list(self.groups)}: each must be one of {list(GROUPS)}")

    def group_width(self, group: str) -> int:
        """Columns of one group."""
        return {
            "token_state": {
                "target": self.target_hidden_size,
                "draft": self.draft_hidden_size,
                "both": self.target_hidden_size + self.draft_hidden_size,
            }[self.source],
            "context_state": self.target_hidden_size,
            "rule_scores": RULE_SCORES,
            "token_classes": 2 * len(TOKEN_CLASSES),
        }[group]

    @property
    def dimension(self) -> int:
        return sum(self.group_width(group) for group in self.groups)

    def columns(self, groups: tuple[str, ...]) -> list[int]:
        """Indices of the columns of ``groups`` (each one of this spec's) in this spec's feature rows."""
        start, spans = 0, {}
        for group in self.groups:
            spans[group] = range(start, start + self.group_width(group))
            start += self.group_width(group)
        missing = [group for group in groups if group not in spans]
        if missing:
            raise InputError(f"feature groups {missing} are not among the computed ones {list(self.groups)}")
        return [column for group in groups for column in spans[group]]

    def narrowed(self, groups: tuple[str, ...]) -> FeatureSpec:
        """This spec reading ``groups`` only, in this spec's order."""
        return FeatureSpec(
            self.source,
            self.target_hidden_size,
            self.draft_hidden_size,
            tuple(group for group in self.groups if group in groups),
        )

    @property
    def reads(self) -> tuple[str, ...]:
        """Whose hidden states the head reads (target, draft): the sizes a pair must match."""
        models = set()
        if "token_state" in self.groups:
            models |= {"target", "draft"} if self.source == "both" else {self.source}
        if "context_state" in self.groups:
            models.add("target")
        return tuple(model for model in ("target", "draft") if model in models)
