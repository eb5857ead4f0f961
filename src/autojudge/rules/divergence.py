"""Divergences and entropies of next-token distributions, batched over leading dimensions.

Every function takes logits (or log-probabilities: any tensor whose softmax is the
distribution) of shape [..., V] and returns one value per row, shape [...], in nats.
Zero-probability tokens (logit -inf) contribute 0, as in the definitions.
"""

from __future__ import annotations

import torch


def _log_probs(logits: torch.Tensor) -> torch.Tensor:
    return torch.log_softmax(logits.float(), dim=-1)


def _plogp_ratio(log_p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """Sum over V of p * (log p - log q), with 0 * log(0 / q) = 0."""
    p = log_p.exp()
    terms = torch.where(p > 0, p * (log_p - log_q), torch.zeros_like(p))
    return terms.sum(dim=-1)


def kl_divergence(target_logits: torch.Tensor, draft_logits: torch.Tensor) -> torch.Tensor:
    """KL(P_target || P_draft), the direction FSD defines (appendix A)."""
    return _plogp_ratio(_log_probs(target_logits), _log_probs(draft_logits))


def js_divergence(target_logits: torch.Tensor, draft_logits: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence: mean KL of each distribution to their average M."""
    log_p, log_q = _log_probs(target_logits), _log_probs(draft_logits)
    log_m = torch.logaddexp(log_p, log_q) - torch.log(torch.tensor(2.0))
    return 0.5 * _plogp_ratio(log_p, log_m) + 0.5 * _plogp_ratio(log_q, log_m)


def tv_distance(target_logits: torch.Tensor, draft_logits: torch.Tensor) -> torch.Tensor:
    """Total variation distance: half the L1 distance between the two distributions."""
    p, q = _log_probs(target_logits).exp(), _log_probs(draft_logits).exp()
    return 0.5 * (p - q).abs().sum(dim=-1)


def entropy(logits: torch.Tensor) -> torch.Tensor:
    """Shannon entropy of the distribution."""
    log_p = _log_probs(logits)
    p = log_p.exp()
    return -torch.where(p > 0, p * log_p, torch.zeros_like(p)).sum(dim=-1)


def top1_probability(logits: torch.Tensor) -> torch.Tensor:
    """Probability of the most likely token."""
    return _log_probs(logits).exp().amax(dim=-1)


DIVERGENCES = {"js": js_divergence, "kl": kl_divergence, "tv": tv_distance}
