"""Right-padded training batches of (prompt, response) token ids, loss on the response only."""

from __future__ import annotations

import torch


def padded_batch(rows: list[tuple[list[int], list[int]]], pad_token_id: int) -> tuple[torch.Tensor, ...]:
    """Token ids, attention mask and labels (prompt positions and padding masked with -100)."""
    width = max(len(prompt) + len(response) for prompt, response in rows)
    ids = torch.full((len(rows), width), pad_token_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    labels = torch.full_like(ids, -100)
    for row, (prompt, response) in enumerate(rows):
        sequence = prompt + response
        ids[row, : len(sequence)] = torch.tensor(sequence)
        mask[row, : len(sequence)] = 1
        labels[row, len(prompt) : len(sequence)] = torch.tensor(response)
    return ids, mask, labels
