"""One verification step's context: what the runner opens and the patched ``rejection_sample`` decides with.

The decision itself (``StepContext.decide_greedy`` and ``decide_sampled``) is everything the patch runs on
the engine's device besides vLLM's own kernels, so that code can be checked on a device without vLLM
(results/gpu/check_core_on_cuda.py).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from autojudge.rules.acceptance import Window
from autojudge.rules.verdict import greedy_choice
from autojudge.rules.verification import (
    accepted_rows,
    greedy_verify,
    lossy_allowed,
    lossy_per_request,
    mixed_verdict,
    tempered_draft_logits,
)


class SampledDecision(NamedTuple):
    """A step with sampled rows, decided: what the patch hands vLLM's kernel and emits for greedy rows."""

    accepted: torch.Tensor  # [N] bool: the rule's acceptances (the native verdict included)
    choice: torch.Tensor  # [N] the target's greedy token per row
    forced_uniform: torch.Tensor  # [N] the step's uniforms with u = 0 where a sampled row is accepted


@dataclass
class StepContext:
    """What one verification step decides with beyond vLLM's own arguments."""

    rules: list[Any]  # the distinct AcceptanceRules of this step's requests
    rule_of_row: torch.Tensor | None  # [N] index into rules per draft row (None: one rule)
    target_hidden: torch.Tensor  # [N, H] target hidden state at each draft token's position
    context_hidden: torch.Tensor  # [N, H] target hidden state that produced each draft row's logits
    draft_logits: torch.Tensor | None  # [N, V] drafter logits each draft token was chosen from
    drafted: torch.Tensor  # [N] bool: a draft the drafter produced this step (not a placeholder)
    decided: bool = False  # set by the patched rejection_sample
    lossy: torch.Tensor | None = None  # [B] lossy accepts per request, set by decide_greedy/decide_sampled

    def _window(
        self,
        draft: torch.Tensor,
        target_logits: torch.Tensor,
        cu: torch.Tensor,
        draft_logits: torch.Tensor | None,
        native: torch.Tensor | None = None,
        sampled: torch.Tensor | None = None,
    ) -> Window:
        return Window(
            draft, target_logits, draft_logits, self.target_hidden, None, self.context_hidden,
            cu_num_draft_tokens=cu, native=native, sampled=sampled,
        )  # fmt: skip

    def decide_greedy(
        self,
        draft: torch.Tensor,  # [N] int, placeholders < 0
        target_logits: torch.Tensor,  # [N, V]
        cu: torch.Tensor,  # [B] inclusive cumsum of draft counts
        max_spec_len: int,
        bonus: torch.Tensor,  # [B, 1]
    ) -> torch.Tensor:
        """[B, max_spec_len + 1] the tokens of an all-greedy step; sets ``lossy``."""
        window = self._window(draft, target_logits, cu, self.draft_logits)
        accepted = accepted_rows(self.rules, self.rule_of_row, window, lossy_allowed(window, self.drafted))
        self.lossy = lossy_per_request(draft, cu, accepted, window.natively_accepted)
        return greedy_verify(draft, cu, max_spec_len, target_logits, bonus, accepted, window.target_tokens)

    def decide_sampled(
        self,
        draft: torch.Tensor,  # [N] int, placeholders < 0
        target_logits: torch.Tensor,  # [N, V] processed (tempered) target logits
        cu: torch.Tensor,  # [B] inclusive cumsum of draft counts
        row_temperature: torch.Tensor,  # [N] each row's request temperature
        sampled: torch.Tensor,  # [N] bool: rows of sampled requests
        uniform: torch.Tensor,  # [N] float64, the step's uniforms as vLLM draws them
        draft_probs: torch.Tensor | None,  # [N, V]; None: a greedy drafter
    ) -> SampledDecision:
        """A step mixing sampled and greedy rows: the standard test's verdict from ``uniform``, the rule's
        acceptances, and the uniforms that make vLLM's kernel accept them too; sets ``lossy``."""
        choice = greedy_choice(target_logits)
        native, target_prob = mixed_verdict(draft, target_logits, choice, sampled, uniform, draft_probs)
        scale = torch.where(sampled, row_temperature, torch.ones_like(row_temperature))
        draft_logits = tempered_draft_logits(self.draft_logits, scale)
        window = self._window(draft, target_logits, cu, draft_logits, native, sampled)
        accepted = accepted_rows(
            self.rules, self.rule_of_row, window, lossy_allowed(window, self.drafted, target_prob)
        )
        self.lossy = lossy_per_request(draft, cu, accepted, native)
        # vLLM's kernel decides sampled rows again from the uniforms: u = 0 where the rule accepts, so it
        # accepts them too (also where the float32 and float64 comparisons of a tie would differ)
        forced = torch.where(sampled & accepted, torch.zeros_like(uniform), uniform)
        return SampledDecision(accepted, choice, forced)


ACTIVE: ContextVar[StepContext | None] = ContextVar("autojudge_step", default=None)
