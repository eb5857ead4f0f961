"""Batched verification with a lossy acceptance rule, in pure torch (CPU and CUDA alike).

Layout follows vLLM v1's rejection sampler: the draft tokens of all requests are flattened into
``N = sum(num_draft_tokens)`` rows, request ``b`` owning rows ``cu[b-1]:cu[b]`` (``cu`` is
``cu_num_draft_tokens``, inclusive cumsum, shape ``[B]``). Row ``n`` of ``target_logits``
(``[N, V]``) is the target's prediction for the slot draft token ``n`` fills. The output is
``[B, max_spec_len + 1]`` int32, accepted tokens then one correction or bonus token, padded
with -1 (vLLM's ``PLACEHOLDER_TOKEN_ID``).

The decisions are the reference engine's rules, built by the registry (``autojudge.rules``): one
``Window`` holding all N rows serves the whole batch; row-wise rules ignore its ``cu_num_draft_tokens``,
FLy reads it to look ahead within each request. A rule that decides matches too (FSD as published)
decides every row it may; where it may not (a placeholder draft, a step without drafter logits), the
native decision stands.

Sampled requests (``sampled_rows``): the window's ``native`` holds the standard test's verdict
(u <= p(x)), and a rule's acceptance adds to it: a row is accepted when the standard test or the rule
accepts it (also for FSD as published, whose rejection of matches is a greedy notion).
``sampled_acceptance`` hands those decisions to vLLM's own kernel (``patches.py``).

No step synchronises with the host: sizes come from tensor shapes and the Python
``max_spec_len``; there are no loops over the batch.
"""

from __future__ import annotations

import torch

from autojudge.rules.acceptance import AcceptanceRule, Window

PLACEHOLDER_TOKEN_ID = -1


def accepted_rows(
    rules: list[AcceptanceRule],
    rule_of_row: torch.Tensor | None,
    window: Window,
    lossy_allowed: torch.Tensor,
    sampled_rows: torch.Tensor | None = None,
) -> torch.Tensor:
    """[N] bool: whether verification accepts each row, decided by ``rules[rule_of_row[n]]`` (one rule:
    ``rule_of_row`` may be None); a row where ``lossy_allowed`` is False keeps the native decision."""
    native = window.natively_accepted
    accept = native.clone()
    for index, rule in enumerate(rules):
        mine = torch.ones_like(native) if len(rules) == 1 else rule_of_row == index
        decided = _decide(rule, window) & lossy_allowed
        ruled = native | decided
        if not rule.keeps_matches:
            published = torch.where(lossy_allowed, decided, native)
            ruled = published if sampled_rows is None else torch.where(sampled_rows, ruled, published)
        accept = torch.where(mine, ruled, accept)
    return accept


def request_of_row(cu_num_draft_tokens: torch.Tensor, num_rows: int) -> torch.Tensor:
    """[N] the request index of each flat row."""
    rows = torch.arange(num_rows, device=cu_num_draft_tokens.device)
    return torch.searchsorted(cu_num_draft_tokens.long(), rows, right=True)


def _decide(rule: AcceptanceRule, window: Window) -> torch.Tensor:
    """The rule's decision; lossless for a rule that reads drafter logits in a step without them."""
    if window.draft_logits is None and rule.reads_draft_logits:
        return torch.zeros_like(window.draft_tokens, dtype=torch.bool)
    return rule.accept_mismatch(window)


def greedy_verify(
    draft_token_ids: torch.Tensor,  # [N] int
    cu_num_draft_tokens: torch.Tensor,  # [B] int, inclusive cumsum
    max_spec_len: int,
    target_logits: torch.Tensor,  # [N, V]
    bonus_token_ids: torch.Tensor,  # [B, 1] or [B]
    accepted: torch.Tensor,  # [N] bool
) -> torch.Tensor:
    """[B, max_spec_len + 1] int32: leading accepted drafts, then target argmax or the bonus token.

    A row is accepted if ``accepted`` says so (never for padded drafts < 0). Verification of a request
    stops at its first unaccepted row, where the target argmax is emitted; if all its drafts are
    accepted the bonus token follows them.
    """
    device = target_logits.device
    num_reqs = cu_num_draft_tokens.shape[0]
    num_rows = draft_token_ids.shape[0]
    width = max_spec_len + 1

    draft = draft_token_ids.long()
    target_argmax = target_logits.argmax(dim=-1)  # [N] int64
    ok = accepted & (draft >= 0)

    # Scatter the flat rows into a [B, width] grid: request index and position of each row.
    cu = cu_num_draft_tokens.long()
    num_draft = torch.diff(cu, prepend=cu.new_zeros(1))  # [B]
    rows = torch.arange(num_rows, device=device)
    req = request_of_row(cu, num_rows)  # [N]
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
