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
W = min(6, K - 1), W in [1, K - 1], K >= 2). Sampled requests follow vLLM 0.33's random path: "natively
accepted" is the standard test (u <= p(x), ``Window.native``) instead of a match, on the processed
target distribution; a greedy draft has q(x) = 1 > 0.

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


def _positions(rows: int, cu_num_draft_tokens: torch.Tensor | None, device: torch.device):
    """[N] each row's position in its request, and [N] that request's draft count."""
    if cu_num_draft_tokens is None:
        cu = torch.tensor([rows], device=device)
    else:
        cu = cu_num_draft_tokens.long().to(device)
    counts = torch.diff(cu, prepend=cu.new_zeros(1))
    index = torch.arange(rows, device=device)
    request = torch.searchsorted(cu, index, right=True)
    return index - (cu - counts)[request], counts[request]


def _sum_ahead(values: torch.Tensor, window_size: int) -> torch.Tensor:
    """[N]: the sum of ``values`` over rows n+1 .. n+window_size (clipped at the last row)."""
    running = torch.cumsum(values, dim=0)
    ahead = torch.clamp(
        torch.arange(values.shape[0], device=values.device) + window_size, max=len(values) - 1
    )
    return running[ahead] - running


def fly_deferrals(
    window: Window, window_size: int, entropy_threshold: float, entropy_top_k: int
) -> torch.Tensor:
    """[N] bool: the natively rejected rows FLy accepts (rows of one request, or of several:
    ``window.cu_num_draft_tokens``)."""
    native = window.natively_accepted
    position, count = _positions(native.shape[0], window.cu_num_draft_tokens, native.device)
    room = position + window_size < count  # the next window_size rows are this request's
    aligned = room & (_sum_ahead(native.long(), window_size) == window_size)
    uncertain = top_k_entropy(window.target_logits, entropy_top_k) >= entropy_threshold
    return ~native & window.allowed & aligned & uncertain


def fly_acceptance_probability(
    window: Window, window_size: int, entropy_threshold: float, entropy_top_k: int
) -> torch.Tensor:
    """[N] float: the probability that FLy accepts row n if the standard test rejects it: the gate, times
    the chance that the next W drafts pass the standard test (the product of their p(x); greedy: 0/1)."""
    draft = window.draft_tokens.long()
    if window.native is None:  # greedy: the next W are accepted iff they match
        passes = window.natively_accepted.double()
    else:
        probs = torch.softmax(window.target_logits.double(), dim=-1)
        passes = probs.gather(-1, draft.clamp(min=0).unsqueeze(-1)).squeeze(-1) * (draft >= 0)
    position, count = _positions(draft.shape[0], window.cu_num_draft_tokens, draft.device)
    room = position + window_size < count
    impossible = _sum_ahead((passes == 0).long(), window_size) > 0  # a p(x) = 0 ahead: log would be -inf
    chance = torch.exp(_sum_ahead(torch.log(passes.clamp(min=1e-300)), window_size))
    chance = torch.where(room & ~impossible, chance, torch.zeros_like(chance))
    uncertain = top_k_entropy(window.target_logits, entropy_top_k) >= entropy_threshold
    return (chance * (uncertain & window.allowed)).float()


class FlyRule(AcceptanceRule):
    """FLy's greedy verification: entropy gate on the target plus a deferred window of native decisions."""

    name = "fly"
    negated_score = True  # accept iff the top-K entropy >= T (then the deferral)

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

    def score(self, window: Window) -> torch.Tensor:
        """The negated top-K entropy of the target, the gate FLy thresholds (its deferral comes after)."""
        return -top_k_entropy(window.target_logits, self.entropy_top_k)

    def accept_mismatch(self, window: Window) -> torch.Tensor:
        return fly_deferrals(window, self.window_size, self.entropy_threshold, self.entropy_top_k)

    def acceptance_probability(self, window: Window) -> torch.Tensor:
        return fly_acceptance_probability(
            window, self.window_size, self.entropy_threshold, self.entropy_top_k
        )

    def describe(self) -> str:
        return f"fly(H_top{self.entropy_top_k}>={self.entropy_threshold:.4g}, window={self.window_size})"
