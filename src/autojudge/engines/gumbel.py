"""Gumbel-max sampling made deterministic per prefix (AutoJudge appendix A).

The noise added to the logits after a prefix depends only on (seed, prefix tokens), so
sampling becomes a deterministic function of the prefix given the seed, and Algorithm 1
keeps its greedy structure.
"""

from __future__ import annotations

import hashlib

import torch


def prefix_seed(seed: int, prefix: list[int]) -> int:
    """A 63-bit seed derived from the run seed and the token prefix."""
    digest = hashlib.blake2b(digest_size=8)
    digest.update(seed.to_bytes(8, "little", signed=True))
    digest.update(torch.tensor(prefix, dtype=torch.int64).numpy().tobytes())
    return int.from_bytes(digest.digest(), "little") >> 1


def gumbel_noise(seed: int, prefix: list[int], vocab_size: int) -> torch.Tensor:
    """Standard Gumbel noise [vocab_size] for the token following ``prefix``."""
    generator = torch.Generator().manual_seed(prefix_seed(seed, prefix))
    uniform = torch.rand(vocab_size, generator=generator, dtype=torch.float64).clamp_(1e-20, 1.0 - 1e-16)
    return (-torch.log(-torch.log(uniform))).float()


def gumbel_argmax(logits: torch.Tensor, seed: int, prefix: list[int]) -> int:
    """Sample from softmax(logits) by the Gumbel-max trick, deterministically given (seed, prefix)."""
    noise = gumbel_noise(seed, prefix, logits.shape[-1]).to(logits.device)
    return int((torch.log_softmax(logits.float(), dim=-1) + noise).argmax())
