"""FLy (training-free loosely speculative decoding): defer a rejection where the target is unsure.

At a mismatch (draft token != target argmax) greedy verification would stop. FLy accepts the draft
token instead when

* the target is uncertain there: the entropy of its ``entropy_top_k`` most likely tokens (their
  probabilities under the full softmax, not renormalised) is at least ``entropy_threshold``;
* the draft token is allowed (its target logit is finite);
* the window holds ``window_size`` more draft tokens after it, and the target's native greedy
  verification accepts every one of them (each equals the target's argmax given the draft so far):
  the draft and the target agree again right after the disputed token.

This is vLLM 0.33's greedy FLy (``vllm/v1/spec_decode/fly.py``, ``rejection_sample_method: "fly"``):
the same entropy (full-softmax top-k probabilities, ``>=`` the threshold), the same deferral test
(a mismatch, an allowed token, ``position + W < K`` so the last W positions are never deferred, the
next W drafts natively accepted), and its window default and checks (``autojudge.rules.config.fly_window``:
W = min(6, K - 1), W in [1, K - 1], K >= 2). Only the greedy path is implemented (AutoJudge's setting).

The decision is computed for a flat batch of requests (vLLM's layout: ``cu_num_draft_tokens`` is the
inclusive cumulative sum of each request's draft count), so the reference engine (one request) and the
vLLM plugin (many) share it.
"""

from __future__ import annotations

import torch

from autojudge.errors import InputError
from autojudge.rules.acceptance import AcceptanceRule, Window


def top_k_entropy(logits: torch.Tensor, top_k: int) -> torch.Tensor:
    """[N]: -sum p log p over each row's ``top_k`` most likely tokens (full-softmax probabilities)."""
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    top = log_probs.topk(min(top_k, logits.shape[-1]), dim=-1).values
    probs = top.exp()
    return -torch.where(probs > 0, probs * top, torch.zeros_like(top)).sum(dim=-1)


def fly_deferrals(
    draft_tokens: torch.Tensor,
    target_logits: torch.Tensor,
    cu_num_draft_tokens: torch.Tensor | None,
    window_size: int,
    entropy_threshold: float,
    entropy_top_k: int,
) -> torch.Tensor:
    """[N] bool: the mismatching rows FLy accepts (``cu_num_draft_tokens`` None: one request)."""
    rows = draft_tokens.shape[0]
    device = target_logits.device
    draft = draft_tokens.long()
    valid = draft >= 0
    matches = (draft == target_logits.argmax(dim=-1)) & valid
    if cu_num_draft_tokens is None:
        cu = torch.tensor([rows], device=device)
    else:
        cu = cu_num_draft_tokens.long().to(device)
    counts = torch.diff(cu, prepend=cu.new_zeros(1))
    index = torch.arange(rows, device=device)
    request = torch.searchsorted(cu, index, right=True)
    position = index - (cu - counts)[request]
    room = position + window_size < counts[request]  # the next window_size rows are this request's
    agreed = torch.cumsum(matches.long(), dim=0)  # matches in rows 0..n
    ahead = torch.clamp(index + window_size, max=rows - 1)
    aligned = room & (agreed[ahead] - agreed == window_size)
    allowed = torch.isfinite(target_logits.gather(1, draft.clamp(min=0).unsqueeze(1)).squeeze(1))
    uncertain = top_k_entropy(target_logits, entropy_top_k) >= entropy_threshold
    return ~matches & valid & allowed & aligned & uncertain


class FlyRule(AcceptanceRule):
    """FLy's greedy verification: entropy gate on the target plus a deferred window of native decisions."""

    name = "fly"

    def __init__(
        self,
        entropy_threshold: float,
        window_size: int,
        entropy_top_k: int = 3,
    ) -> None:
        if window_size < 1:
            raise InputError(f"fly_window_size must be >= 1, got {window_size}")
        if entropy_top_k < 1:
            raise InputError(f"fly_entropy_top_k must be >= 1, got {entropy_top_k}")
        if entropy_threshold < 0:
            raise InputError(f"fly_entropy_threshold must be >= 0, got {entropy_threshold}")
        self.entropy_threshold = entropy_threshold
        self.window_size = window_size
        self.entropy_top_k = entropy_top_k

    def accept_mismatch(self, window: Window) -> torch.Tensor:
        return fly_deferrals(
            window.draft_tokens,
            window.target_logits,
            window.cu_num_draft_tokens,
            self.window_size,
            self.entropy_threshold,
            self.entropy_top_k,
        )

    def describe(self) -> str:
        return f"fly(H_top{self.entropy_top_k}>={self.entropy_threshold:.4g}, window={self.window_size})"
