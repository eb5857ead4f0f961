"""Batched greedy verification with a lossy acceptance rule, in pure torch (CPU and CUDA alike).

Layout follows vLLM v1's rejection sampler: the draft tokens of all requests are flattened into
``N = sum(num_draft_tokens)`` rows, request ``b`` owning rows ``cu[b-1]:cu[b]`` (``cu`` is
``cu_num_draft_tokens``, inclusive cumsum, shape ``[B]``). Row ``n`` of ``target_logits``
(``[N, V]``) is the target's prediction for the slot draft token ``n`` fills. The output is
``[B, max_spec_len + 1]`` int32, accepted tokens then one correction or bonus token, padded
with -1 (vLLM's ``PLACEHOLDER_TOKEN_ID``).

No step synchronises with the host: sizes come from tensor shapes and the Python
``max_spec_len``; there are no loops over the batch.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from autojudge.errors import InputError, ModelPairError
from autojudge.vllm_plugin.config import JudgeHead, PluginConfig, load_judge_head

PLACEHOLDER_TOKEN_ID = -1


class MismatchRule(ABC):
    """Decides, per flattened draft row, whether a draft token may be accepted despite a mismatch."""

    name: str = ""
    needs_hidden: bool = False  # target last-layer hidden state at each draft token's position
    needs_draft_logits: bool = False  # the logits the drafter chose each draft token from

    @abstractmethod
    def accept_mismatch(
        self,
        draft_token_ids: torch.Tensor,  # [N] int
        target_logits: torch.Tensor,  # [N, V] float32
        draft_hidden: torch.Tensor | None,  # [N, H]
        draft_logits: torch.Tensor | None,  # [N, V]
    ) -> torch.Tensor:
        """[N] bool: accept row n even if its draft token is not the target's argmax."""


class ExactRule(MismatchRule):
    """Lossless: never accept a mismatch (vLLM's own greedy verification)."""

    name = "exact"

    def accept_mismatch(
        self,
        draft_token_ids: torch.Tensor,
        target_logits: torch.Tensor,
        draft_hidden: torch.Tensor | None,
        draft_logits: torch.Tensor | None,
    ) -> torch.Tensor:
        return torch.zeros_like(draft_token_ids, dtype=torch.bool)


class TopKRule(MismatchRule):
    """Accept a draft token that is among the target's K highest logits."""

    name = "topk"

    def __init__(self, k: int) -> None:
        self.k = k

    def accept_mismatch(
        self,
        draft_token_ids: torch.Tensor,
        target_logits: torch.Tensor,
        draft_hidden: torch.Tensor | None,
        draft_logits: torch.Tensor | None,
    ) -> torch.Tensor:
        if self.k >= target_logits.shape[-1]:
            return torch.ones_like(draft_token_ids, dtype=torch.bool)
        top = target_logits.topk(self.k, dim=-1).indices  # [N, K]
        return (top == draft_token_ids.long().unsqueeze(-1)).any(dim=-1)


class JudgeRule(MismatchRule):
    """Logistic regression on the target's hidden state at the draft token: accept if p < threshold."""

    name = "judge"
    needs_hidden = True

    def __init__(self, head: JudgeHead, threshold: float, device: torch.device) -> None:
        self.weight = head.weight.to(device=device, dtype=torch.float32)
        self.bias = head.bias
        self.threshold = threshold
        self.hidden_size = head.hidden_size

    def probability(self, hidden: torch.Tensor) -> torch.Tensor:
        """[N] p(mismatch matters) for hidden states [N, H]."""
        return torch.sigmoid(hidden.float() @ self.weight + self.bias)

    def accept_mismatch(
        self,
        draft_token_ids: torch.Tensor,
        target_logits: torch.Tensor,
        draft_hidden: torch.Tensor | None,
        draft_logits: torch.Tensor | None,
    ) -> torch.Tensor:
        assert draft_hidden is not None, "judge rule needs the target hidden states"
        return self.probability(draft_hidden) < self.threshold


class DivergenceRule(MismatchRule):
    """Accept when the target and draft next-token distributions are close (KL/JS/TV < threshold)."""

    name = "divergence"
    needs_draft_logits = True

    def __init__(self, metric: str, threshold: float) -> None:
        self.metric = metric
        self.threshold = threshold

    def divergence(self, target_logits: torch.Tensor, draft_logits: torch.Tensor) -> torch.Tensor:
        """[N] divergence between softmax(target) and softmax(draft); KL is KL(target || draft)."""
        vocab = min(target_logits.shape[-1], draft_logits.shape[-1])
        log_p = target_logits[:, :vocab].float().log_softmax(dim=-1)
        log_q = draft_logits[:, :vocab].float().log_softmax(dim=-1)
        if self.metric == "kl":
            return (log_p.exp() * (log_p - log_q)).sum(dim=-1)
        if self.metric == "tv":
            return 0.5 * (log_p.exp() - log_q.exp()).abs().sum(dim=-1)
        log_m = torch.logaddexp(log_p, log_q) - torch.log(torch.tensor(2.0, device=log_p.device))
        kl_pm = (log_p.exp() * (log_p - log_m)).sum(dim=-1)
        kl_qm = (log_q.exp() * (log_q - log_m)).sum(dim=-1)
        return 0.5 * (kl_pm + kl_qm)

    def accept_mismatch(
        self,
        draft_token_ids: torch.Tensor,
        target_logits: torch.Tensor,
        draft_hidden: torch.Tensor | None,
        draft_logits: torch.Tensor | None,
    ) -> torch.Tensor:
        if draft_logits is None:  # drafter output not captured this step: stay lossless
            return torch.zeros_like(draft_token_ids, dtype=torch.bool)
        return self.divergence(target_logits, draft_logits) < self.threshold


def build_rule(config: PluginConfig, *, hidden_size: int, device: torch.device) -> MismatchRule:
    """Instantiate the configured rule; checks a judge head against the target's hidden size."""
    if config.rule == "exact":
        return ExactRule()
    if config.rule == "topk":
        assert config.top_k is not None
        return TopKRule(config.top_k)
    if config.rule == "judge":
        assert config.judge_head is not None
        head = load_judge_head(config.judge_head)
        if head.hidden_size != hidden_size:
            raise ModelPairError(
                f"autojudge: judge head {config.judge_head} expects hidden size {head.hidden_size}, "
                f"but the target model's last-layer hidden size is {hidden_size}"
            )
        threshold = head.threshold if config.threshold is None else config.threshold
        return JudgeRule(head, threshold, device)
    if config.rule == "divergence":
        assert config.threshold is not None
        return DivergenceRule(config.divergence, config.threshold)
    raise InputError(f"autojudge: unknown rule {config.rule!r}")


def greedy_verify(
    draft_token_ids: torch.Tensor,  # [N] int
    cu_num_draft_tokens: torch.Tensor,  # [B] int, inclusive cumsum
    max_spec_len: int,
    target_logits: torch.Tensor,  # [N, V]
    bonus_token_ids: torch.Tensor,  # [B, 1] or [B]
    accept_mismatch: torch.Tensor,  # [N] bool
) -> torch.Tensor:
    """[B, max_spec_len + 1] int32: leading accepted drafts, then target argmax or the bonus token.

    A row is accepted if its draft equals the target argmax or ``accept_mismatch`` says so (never
    for padded drafts < 0). Verification of a request stops at its first unaccepted row, where the
    target argmax is emitted; if all its drafts are accepted the bonus token follows them.
    """
    device = target_logits.device
    num_reqs = cu_num_draft_tokens.shape[0]
    num_rows = draft_token_ids.shape[0]
    width = max_spec_len + 1

    draft = draft_token_ids.long()
    target_argmax = target_logits.argmax(dim=-1)  # [N] int64
    ok = ((draft == target_argmax) | accept_mismatch) & (draft >= 0)

    # Scatter the flat rows into a [B, width] grid: request index and position of each row.
    cu = cu_num_draft_tokens.long()
    num_draft = torch.diff(cu, prepend=cu.new_zeros(1))  # [B]
    rows = torch.arange(num_rows, device=device)
    req = torch.searchsorted(cu, rows, right=True)  # [N]
    flat = req * width + (rows - (cu - num_draft)[req])  # [N] index into [B * width]

    ok_grid = torch.zeros(num_reqs * width, dtype=torch.int32, device=device)
    ok_grid.scatter_(0, flat, ok.to(torch.int32))
    num_accepted = ok_grid.view(num_reqs, width).cumprod(dim=1).sum(dim=1)  # [B], <= num_draft

    draft_grid = torch.full((num_reqs * width,), PLACEHOLDER_TOKEN_ID, dtype=torch.long, device=device)
    draft_grid.scatter_(0, flat, draft)
    argmax_grid = torch.zeros(num_reqs * width, dtype=torch.long, device=device)
    argmax_grid.scatter_(0, flat, target_argmax)

    cols = torch.arange(width, device=device)
    out = torch.where(
        cols.unsqueeze(0) < num_accepted.unsqueeze(1),
        draft_grid.view(num_reqs, width),
        torch.full_like(draft_grid.view(num_reqs, width), PLACEHOLDER_TOKEN_ID),
    )
    correction = argmax_grid.view(num_reqs, width).gather(1, num_accepted.unsqueeze(1)).squeeze(1)
    last = torch.where(num_accepted < num_draft, correction, bonus_token_ids.reshape(-1).long())
    out.scatter_(1, num_accepted.unsqueeze(1), last.unsqueeze(1))
    return out.to(torch.int32)
