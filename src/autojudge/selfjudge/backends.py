"""Teacher-forced continuation log-likelihoods under the target, packed where sequences share a prefix.

SelfJudge scores every mismatch of a response twice (y and z, each with N next tokens), and every
mismatch's prefix is a prefix of that response. `PackedScorer` therefore puts a run of sequences whose
prefixes nest into one row: their shared context once, then each sequence's scored part (a branch),
attending to the context up to its own start and causally to itself (a 4D attention mask with explicit
position ids). A response with K mismatches costs one pass over it plus 2K(N+1) tokens, instead of 2K
passes over the prefix; sequences that share nothing cost what separate passes would.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from transformers import PreTrainedModel


@dataclass
class _Row:
    """One packed row: a context and branches (sequence index, start, scored tokens) that attend to it."""

    context: list[int]
    branches: list[tuple[int, int, list[int]]] = field(default_factory=list)

    @property
    def length(self) -> int:
        return len(self.context) + sum(len(tokens) for _, _, tokens in self.branches)


def _nested(a: list[int], b: list[int]) -> bool:
    """Whether one of two token lists is a prefix of the other."""
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def pack(sequences: list[list[int]], starts: list[int], max_row_tokens: int) -> list[_Row]:
    """Rows of consecutive sequences whose prefixes (``sequence[:start]``) nest, at most ``max_row_tokens`` long."""
    rows: list[_Row] = []
    for index, (sequence, start) in enumerate(zip(sequences, starts, strict=True)):
        if not 0 < start <= len(sequence):
            raise ValueError(f"start must be in 1..{len(sequence)}, got {start}")
        prefix, branch = sequence[:start], sequence[start:]
        row = rows[-1] if rows else None
        if (
            row is None
            or not _nested(row.context, prefix)
            or row.length + len(branch) + max(0, len(prefix) - len(row.context))
            > max(max_row_tokens, len(sequence))
        ):
            row = _Row(prefix)
            rows.append(row)
        if len(prefix) > len(row.context):
            row.context = prefix
        row.branches.append((index, start, branch))
    return rows


def _layout(row: _Row) -> tuple[list[int], list[int], torch.Tensor, list[tuple[int, list[int], list[int]]]]:
    """Tokens, position ids, the allowed-attention matrix and, per branch, (index, tokens, predicting rows)."""
    tokens, positions = list(row.context), list(range(len(row.context)))
    width = row.length
    allowed = torch.zeros(width, width, dtype=torch.bool)
    allowed[: len(row.context), : len(row.context)] = (
        torch.ones(len(row.context), len(row.context)).tril().bool()
    )
    scored = []
    for index, start, branch in row.branches:
        offset = len(tokens)
        tokens += branch
        positions += range(start, start + len(branch))
        for j in range(len(branch)):
            allowed[offset + j, :start] = True
            allowed[offset + j, offset : offset + j + 1] = True
        # token j is predicted by the row before it: the context's last prefix token, then the branch's own
        scored.append((index, branch, [start - 1, *range(offset, offset + len(branch) - 1)][: len(branch)]))
    return tokens, positions, allowed, scored


class PackedScorer:
    """Sum of log P(sequence[t] | sequence[:t]) for t >= start of each sequence, from packed forward passes."""

    def __init__(
        self, model: PreTrainedModel, pad_token_id: int, batch_size: int = 32, max_row_tokens: int = 512
    ) -> None:
        self.model = model
        self.pad_token_id = pad_token_id
        self.batch_size = batch_size
        self.max_row_tokens = max_row_tokens
        self.device = next(model.parameters()).device

    def continuation_logprobs(self, sequences: list[list[int]], starts: list[int]) -> list[float]:
        results = [0.0] * len(sequences)
        rows = sorted(pack(sequences, starts, self.max_row_tokens), key=lambda r: r.length)
        for first in range(0, len(rows), self.batch_size):
            for index, value in self._score([_layout(row) for row in rows[first : first + self.batch_size]]):
                results[index] = value
        return results

    @torch.inference_mode()
    def _score(self, layouts: list) -> list[tuple[int, float]]:
        width = max(len(tokens) for tokens, *_ in layouts)
        ids = torch.full((len(layouts), width), self.pad_token_id, dtype=torch.long)
        positions = torch.zeros_like(ids)
        dtype = next(self.model.parameters()).dtype
        mask = torch.full((len(layouts), 1, width, width), torch.finfo(dtype).min, dtype=dtype)
        mask[:, 0].diagonal(dim1=-2, dim2=-1).zero_()  # padding attends to itself (no empty softmax)
        for row, (tokens, position_ids, allowed, _) in enumerate(layouts):
            ids[row, : len(tokens)] = torch.tensor(tokens)
            positions[row, : len(tokens)] = torch.tensor(position_ids)
            mask[row, 0, : len(tokens), : len(tokens)].masked_fill_(allowed, 0.0)
        logits = self.model(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device),
            position_ids=positions.to(self.device),
        ).logits
        results = []
        for row, (*_, scored) in enumerate(layouts):
            for index, branch, predicting in scored:
                log_probs = torch.log_softmax(logits[row, predicting].double(), dim=-1)
                targets = torch.tensor(branch, dtype=torch.long, device=log_probs.device)
                results.append((index, float(log_probs.gather(-1, targets.unsqueeze(-1)).sum())))
        return results
