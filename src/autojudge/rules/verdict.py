"""Lossless verification's greedy verdict, written once for the rules, the verification core, the reference
engines and the vLLM plugin: the target's choice at a row is its argmax, and a greedy draft token is
natively accepted iff it is that choice (placeholder drafts < 0 never are)."""

from __future__ import annotations

import torch


def greedy_choice(target_logits: torch.Tensor) -> torch.Tensor:
    """[...] the target's greedy token at each row of ``target_logits`` [..., V] (ties: the first, as
    vLLM's greedy sampler breaks them)."""
    return target_logits.argmax(dim=-1)


def greedy_verdict(draft: torch.Tensor, choice: torch.Tensor) -> torch.Tensor:
    """[N] bool: greedy verification accepts draft token n (it is ``choice[n]``, the target's greedy token
    there: ``greedy_choice``, computed once per step by the caller)."""
    return (draft >= 0) & (draft.long() == choice)
