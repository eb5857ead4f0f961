"""The verification decision, written once: the reference engines and the vLLM plugin both call it.

Layout follows vLLM v1's rejection sampler: the draft tokens of all requests are flattened into
``N = sum(num_draft_tokens)`` rows, request ``b`` owning rows ``cu[b-1]:cu[b]`` (``cu`` is
``cu_num_draft_tokens``, inclusive cumsum, shape ``[B]``). Row ``n`` of the target's logits is its
prediction for the slot draft token ``n`` fills. A reference engine verifies one request: its window is
the batch of one.

* ``standard_test``: lossless speculative sampling's verdict, u <= p(x) / q(x) (q = 1 for a greedy
  drafter). Compared in float32, as vLLM's CPU kernel compares it (its Triton kernel compares in float64:
  the two differ only where u lies within float32 rounding of p(x), probability about 1e-7 per row).
* ``accepted_rows``: which rows verification accepts, given the rules of the rows, the native verdict
  (greedy: draft == target argmax; sampled: the standard test) and where a lossy acceptance is allowed.
  A rule's acceptance adds to the native one (FSD as published, ``keeps_matches`` False, decides greedy
  matches too); a row the target cannot emit (p(x) = 0, a -inf processed logit), a placeholder draft, or
  a row without the drafter's logits for a rule that reads them keeps the native decision.
* ``lossy_per_request``: per request, the emitted drafts the native test rejects (the plugin's counters).
* ``greedy_verify``: the output of greedy requests, accepted drafts then the target's argmax (correction
  at the first unaccepted row) or the bonus token, ``[B, max_spec_len + 1]`` padded with -1 (vLLM's
  ``PLACEHOLDER_TOKEN_ID``). Sampled requests draw their correction and bonus tokens elsewhere: the
  plugin keeps vLLM's, the reference engines draw theirs as vLLM does (``decoding.sampling``).

No step synchronises with the host (sizes come from tensor shapes and the Python ``max_spec_len``) and
there are no loops over the batch: the plugin runs these on the engine's device.
"""

from __future__ import annotations

import torch

from autojudge.errors import InputError
from autojudge.rules.acceptance import AcceptanceRule, Window
from autojudge.rules.verdict import greedy_choice, greedy_verdict

PLACEHOLDER_TOKEN_ID = -1


def standard_test(
    draft: torch.Tensor,  # [N] int, placeholders < 0
    target_probs: torch.Tensor,  # [N, V] processed target distribution
    uniform: torch.Tensor,  # [N] float64, vLLM's generate_uniform_probs
    draft_probs: torch.Tensor | None = None,  # [N, V]; None: a greedy drafter (q one-hot at x)
) -> tuple[torch.Tensor, torch.Tensor]:
    """[N] bool verdict u <= p(x) / q(x), and [N] p(x) (float32)."""
    index = draft.long().clamp(min=0).unsqueeze(1)
    target_prob = target_probs.float().gather(1, index).squeeze(1)
    draft_prob = torch.ones_like(target_prob) if draft_probs is None else draft_probs.float().gather(1, index)
    draft_prob = draft_prob.reshape(target_prob.shape)
    native = (draft >= 0) & (draft_prob > 0) & (target_prob / draft_prob >= uniform.float())
    return native, target_prob


def mixed_verdict(
    draft: torch.Tensor,  # [N] int, placeholders < 0
    target_logits: torch.Tensor,  # [N, V] processed target logits
    choice: torch.Tensor,  # [N] the target's greedy token per row (``greedy_choice``)
    sampled: torch.Tensor,  # [N] bool: rows verified by the standard test
    uniform: torch.Tensor,  # [N] float64
    draft_probs: torch.Tensor | None = None,  # [N, V]; None: a greedy drafter
) -> tuple[torch.Tensor, torch.Tensor]:
    """[N] bool native verdict of a batch mixing sampled rows (the standard test) and greedy rows (the
    greedy verdict), and [N] p(x) under the processed target distribution (float32)."""
    target_probs = target_logits.softmax(dim=-1, dtype=torch.float32)
    native, target_prob = standard_test(draft, target_probs, uniform, draft_probs)
    return torch.where(sampled, native, greedy_verdict(draft, choice)), target_prob


def rejected_mass(window: Window, probs: torch.Tensor | None) -> torch.Tensor:
    """[W] float64: the probability that lossless verification rejects each draft token, 1 - p(x) (greedy:
    p is one-hot at the target's choice, so 1 at a mismatch and 0 at a match)."""
    if probs is None:
        return (~window.natively_accepted).double()
    draft = window.draft_tokens.long().clamp(min=0).unsqueeze(-1)
    return 1.0 - probs[: draft.shape[0]].gather(-1, draft).squeeze(-1).double()


def lossy_allowed(
    window: Window, drafted: torch.Tensor | None = None, target_prob: torch.Tensor | None = None
) -> torch.Tensor:
    """[N] bool: rows where a rule may accept what the native test rejects: the drafter produced the row
    this step (``drafted``; None: every row), and the target can emit the draft token (a finite processed
    logit; for sampled rows, ``target_prob`` p(x) > 0: an underflowed probability cannot be forced)."""
    allowed = window.allowed
    if drafted is not None:
        allowed = allowed & drafted
    if target_prob is not None:
        sampled = window.sampled_rows()
        allowed = allowed & ((target_prob > 0) | ~sampled)
    return allowed


def accepted_rows(
    rules: list[AcceptanceRule],
    rule_of_row: torch.Tensor | None,
    window: Window,
    allowed: torch.Tensor,
) -> torch.Tensor:
    """[N] bool: whether verification accepts each row, decided by ``rules[rule_of_row[n]]`` (one rule:
    ``rule_of_row`` may be None); a row where ``allowed`` (``lossy_allowed``) is False keeps the native
    decision."""
    native = window.natively_accepted
    sampled = window.sampled_rows()
    accept = native.clone()
    for index, rule in enumerate(rules):
        mine = torch.ones_like(native) if len(rules) == 1 else rule_of_row == index
        decided = _decide(rule, window, allowed & mine)
        ruled = native | decided
        if not rule.keeps_matches:  # FSD as published decides greedy matches too
            ruled = torch.where(sampled, ruled, torch.where(allowed, decided, native))
        accept = torch.where(mine, ruled, accept)
    return accept


def _decide(rule: AcceptanceRule, window: Window, allowed: torch.Tensor) -> torch.Tensor:
    """The rule's decision on its ``allowed`` rows. A rule that reads the drafter's logits refuses a window
    without them (never a silent lossless decision), unless none of its rows may be decided (placeholders)."""
    if window.draft_logits is None and rule.reads_draft_logits:
        if bool(allowed.any()):
            raise InputError(
                f"autojudge: rule {rule.describe()} reads the drafter's logits, and this window has drafts "
                "without them"
            )
        return torch.zeros_like(allowed)
    return rule.accept_mismatch(window) & allowed


def accepted_count(
    rule: AcceptanceRule, window: Window, target_prob: torch.Tensor | None = None
) -> tuple[int, int]:
    """One request's window: the leading positions verification accepts, and how many of them the native
    test rejects (lossy accepts); ``target_prob``: p(x) of a sampled window (``standard_test``). Greedy,
    the token that follows is the target's argmax at the first unaccepted position (the correction), or
    at the last (the bonus token), as ``greedy_verify`` emits it."""
    accepted = accepted_rows([rule], None, window, lossy_allowed(window, target_prob=target_prob))
    rejected = torch.nonzero(~accepted)
    count = int(rejected[0, 0]) if len(rejected) else len(accepted)
    return count, int((~window.natively_accepted[:count]).sum())


def lossy_per_request(
    draft: torch.Tensor,  # [N] int, placeholders < 0
    cu_num_draft_tokens: torch.Tensor,  # [B] int, inclusive cumsum
    accepted: torch.Tensor,  # [N] bool, ``accepted_rows``
    native: torch.Tensor,  # [N] bool, the native verdict
) -> torch.Tensor:
    """[B] int64: per request, the emitted drafts (its leading accepted rows) that the native test rejects."""
    num_rows = draft.shape[0]
    cu = cu_num_draft_tokens.long()
    req = request_of_row(cu, num_rows)
    start = (cu - torch.diff(cu, prepend=cu.new_zeros(1)))[req]  # [N] first row of each row's request
    refused = torch.cumsum((~(accepted & (draft >= 0))).long(), dim=0)
    refused = torch.cat([refused.new_zeros(1), refused])  # refused[n]: unaccepted rows before row n
    emitted = refused[torch.arange(num_rows, device=draft.device) + 1] == refused[start]
    counts = torch.zeros(cu.shape[0], dtype=torch.long, device=draft.device)
    return counts.index_add_(0, req, (emitted & ~native).long())


def request_of_row(cu_num_draft_tokens: torch.Tensor, num_rows: int) -> torch.Tensor:
    """[N] the request index of each flat row."""
    rows = torch.arange(num_rows, device=cu_num_draft_tokens.device)
    return torch.searchsorted(cu_num_draft_tokens.long(), rows, right=True)


def tempered_draft_logits(
    draft_logits: torch.Tensor | None, row_temperature: torch.Tensor
) -> torch.Tensor | None:
    """The drafter's logits at each row's temperature (1 for greedy rows): the divergence rules compare
    them with the target's processed logits, like with like."""
    if draft_logits is None:
        return None
    return draft_logits / row_temperature.to(draft_logits.dtype).unsqueeze(1)


def greedy_verify(
    draft_token_ids: torch.Tensor,  # [N] int
    cu_num_draft_tokens: torch.Tensor,  # [B] int, inclusive cumsum
    max_spec_len: int,
    target_logits: torch.Tensor,  # [N, V]
    bonus_token_ids: torch.Tensor,  # [B, 1] or [B]
    accepted: torch.Tensor,  # [N] bool
    choice: torch.Tensor | None = None,  # [N] ``greedy_choice(target_logits)`` if the caller has it
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
    argmax_grid.scatter_(0, flat, greedy_choice(target_logits) if choice is None else choice.long())

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
