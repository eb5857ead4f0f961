"""What a decoder returns for one prompt: the tokens and the speed counters."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field


@dataclass
class DecodeStats:
    """Counters of one decoded sequence."""

    tokens: int = 0  # generated tokens (prompt excluded)
    target_passes: int = 0  # target forward passes, the prompt's included
    draft_passes: int = 0
    accepted_draft_tokens: int = 0  # draft tokens kept by verification
    accepted_mismatches: int = 0  # of those, tokens the target would not have chosen (lossy accepts)
    seconds: float = 0.0
    shifts: list[float] = field(default_factory=list)  # per observed rule: total variation summed over tokens

    def add_shifts(self, shifts: list[float]) -> None:
        if shifts:
            self.shifts = [a + b for a, b in zip(self.shifts or [0.0] * len(shifts), shifts, strict=True)]

    @property
    def mat(self) -> float:
        """Mean accepted tokens per target forward pass (the papers' speed metric)."""
        return self.tokens / self.target_passes if self.target_passes else 0.0


@dataclass
class Generation:
    """A decoded continuation of a prompt."""

    tokens: list[int]
    stats: DecodeStats = field(default_factory=DecodeStats)
    finished: bool = False  # ended with an end-of-sequence token rather than the length cap


def clip_at_stop(tokens: list[int], eos_ids: set[int], budget: int) -> tuple[list[int], bool]:
    """Cut ``tokens`` after the first end-of-sequence token or at ``budget``; report whether EOS ended it."""
    for index, token in enumerate(tokens[:budget]):
        if token in eos_ids:
            return tokens[: index + 1], True
    return tokens[:budget], False


Hook = Callable[[list[tuple[int, Generation]]], Iterable[int]]  # finished requests -> requests to drop
