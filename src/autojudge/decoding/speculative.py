"""Reference speculative decoding in PyTorch/transformers with a pluggable acceptance rule.

Each cycle: the draft proposes W tokens greedily; the target scores the pending tokens and
all W proposals in one forward pass; the rule accepts a prefix of the proposals; the target's
own token follows (the correction at the first rejection, or the bonus token after a fully
accepted window). Greedy by default (with `ExactMatch` the output equals target-only greedy
decoding); with a ``Sampling`` the verification is speculative sampling (``decoding.sampling``).

The first response token is the prompt pass's own, with no draft, as vLLM's prefill emits it: no rule
decides it, so a lossy rule never replaces the opening token, and cycles line up with vLLM's.
"""

from __future__ import annotations

import time

import torch

from autojudge.decoding.generation import DecodeStats, Generation, clip_at_stop
from autojudge.decoding.runner import CachedRunner
from autojudge.decoding.sampling import Sampling, verify
from autojudge.models.pair import ModelPair
from autojudge.rules.acceptance import AcceptanceRule


class SpeculativeDecoder:
    """Draft-then-verify decoding of one sequence at a time (batch size 1, as in the papers)."""

    def __init__(
        self,
        pair: ModelPair,
        rule: AcceptanceRule,
        window: int,
        max_new_tokens: int,
        sampling: Sampling | None = None,
    ) -> None:
        if window < 1:
            raise ValueError(f"the draft window must be at least 1, got {window}")
        self.target = CachedRunner(pair.target, pair.vocab_size)
        self.draft = CachedRunner(pair.draft, pair.vocab_size)
        self.rule = rule
        self.window = window
        self.max_new_tokens = max_new_tokens
        self.eos_ids = pair.eos_token_ids
        self.sampling = sampling

    def _propose(
        self, sequence: list[int], count: int
    ) -> tuple[list[int], torch.Tensor, torch.Tensor | None]:
        """Draft ``count`` tokens greedily; returns them, their logits [count, V] and, if asked, states."""
        pending = sequence[self.draft.length :]
        tokens, logit_rows, hidden_rows = [], [], []
        for _ in range(count):
            logits, hidden = self.draft.forward(pending)
            if tokens:
                hidden_rows.append(hidden[-1])  # state encoding the previous draft token
            token = int(logits[-1].argmax())
            tokens.append(token)
            logit_rows.append(logits[-1])
            pending = [token]
        hidden_states = None
        if self.rule.needs_draft_hidden:
            _, hidden = self.draft.forward(pending)  # encode the last draft token too
            hidden_rows.append(hidden[-1])
            hidden_states = torch.stack(hidden_rows)
        return tokens, torch.stack(logit_rows), hidden_states

    def generate(self, prompt: list[int], seed: int | None = None) -> Generation:
        """Decode ``prompt`` (sampled: with the Sampling's seed, or ``seed``)."""
        started = time.perf_counter()
        generator = None
        if self.sampling is not None:
            generator = torch.Generator().manual_seed(self.sampling.seed if seed is None else seed)
        self.target.reset()
        self.draft.reset()
        sequence = list(prompt)
        generated: list[int] = []
        stats = DecodeStats()
        finished = False
        while len(generated) < self.max_new_tokens and not finished:
            budget = self.max_new_tokens - len(generated)
            count = min(self.window, budget - 1) if generated else 0  # the prompt's pass: no draft
            base = len(sequence)
            pending = sequence[self.target.length :]
            if count > 0:
                proposals, draft_logits, draft_hidden = self._propose(sequence, count)
            else:
                proposals, draft_logits, draft_hidden = [], None, None
            logits, hidden = self.target.forward(pending + proposals)
            # row p-1+i predicts the token after draft token i (row p-1: after the pending tokens)
            first = len(pending) - 1
            verdict = verify(
                self.rule,
                logits[first : first + count + 1],
                proposals,
                draft_logits,
                hidden[first + 1 : first + 1 + count],
                draft_hidden,
                self.sampling,
                generator,
            )
            accepted, mismatches = verdict.accepted, verdict.mismatches
            new_tokens, finished = clip_at_stop([*proposals[:accepted], verdict.follow], self.eos_ids, budget)
            stats.accepted_draft_tokens += min(accepted, len(new_tokens))
            stats.accepted_mismatches += mismatches
            generated.extend(new_tokens)
            sequence.extend(new_tokens)
            self.target.truncate(base + accepted)
            self.draft.truncate(min(self.draft.length, base + accepted))
        stats.tokens = len(generated)
        stats.target_passes = self.target.passes
        stats.draft_passes = self.draft.passes
        stats.seconds = time.perf_counter() - started
        return Generation(tokens=generated, stats=stats, finished=finished)
