"""The semantic preservation score of replacing the target's token y by the draft's z (SelfJudge, eq. 7).

    s = [log P(z | prefix) - log P(y | prefix)]
        + [log P(suffix | prefix, z) - log P(suffix | prefix, y)]

where ``suffix`` is the target's own next N tokens after y (its greedy continuation, cut at the
end of the response). Both terms are sums of the target's log-probabilities from position
``len(prefix)`` on, so s is the difference of two teacher-forced continuation log-likelihoods.
Low s: the target finds z and what it wrote next incompatible, so the mismatch is important.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import torch


@dataclass(frozen=True)
class Replacement:
    """One mismatch to score: the context, the target's token, the draft's token, the target's next tokens."""

    prefix: list[int]  # prompt + response before the mismatch
    original: int  # y_i, the target's token
    replacement: int  # z_i, the draft's token
    suffix: list[int]  # y_{>i}: the target's next N tokens after y_i

    def sequences(self) -> tuple[list[int], list[int]]:
        """(prefix + y + suffix, prefix + z + suffix)."""
        return (
            [*self.prefix, self.original, *self.suffix],
            [*self.prefix, self.replacement, *self.suffix],
        )


class LogprobScorer(Protocol):
    """Teacher-forced log-likelihood of each sequence's tokens from ``start`` on, under the target."""

    def continuation_logprobs(self, sequences: list[list[int]], starts: list[int]) -> list[float]: ...


def continuation_logprob(logits: torch.Tensor, tokens: Sequence[int], start: int) -> float:
    """Sum of log P(tokens[t] | tokens[:t]) for t >= start, from ``logits`` [len(tokens), V] of one forward pass."""
    if not 0 < start <= len(tokens):
        raise ValueError(f"start must be in 1..{len(tokens)}, got {start}")
    log_probs = torch.log_softmax(logits[start - 1 : len(tokens) - 1].double(), dim=-1)
    targets = torch.tensor(tokens[start:], dtype=torch.long)
    return float(log_probs.gather(-1, targets.unsqueeze(-1)).sum())


def preservation_scores(replacements: list[Replacement], scorer: LogprobScorer) -> list[float]:
    """s(y, z_i) for every replacement, with one scorer call for all of them."""
    sequences, starts = [], []
    for replacement in replacements:
        sequences.extend(replacement.sequences())
        starts.extend([len(replacement.prefix)] * 2)
    logprobs = scorer.continuation_logprobs(sequences, starts)
    return [logprobs[2 * i + 1] - logprobs[2 * i] for i in range(len(replacements))]
