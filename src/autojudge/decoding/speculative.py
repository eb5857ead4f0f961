"""Speculative decoding of one sequence at a time (batch size 1, as in the papers) with any rule.

Each cycle: the draft proposes W tokens greedily; the target scores the pending tokens and all W
proposals in one forward pass; the rule accepts a prefix of the proposals; the target's own token follows
(the correction at the first rejection, or the bonus token after a fully accepted window). Greedy by
default (with `ExactMatch` the output equals target-only greedy decoding); with a ``Sampling`` the
verification is speculative sampling (``decoding.sampling``). The first response token is the prompt
pass's own, with no draft, as vLLM's prefill emits it.

The cycle is the batched engine's (``decoding.batched``) with one row: one implementation of decoding
for both, and of verification for them and the vLLM plugin (``rules.verification``).
"""

from __future__ import annotations

from dataclasses import replace

from autojudge.decoding.batched import BatchedDecoder, Request
from autojudge.decoding.generation import Generation
from autojudge.decoding.sampling import Sampling
from autojudge.models.pair import ModelPair
from autojudge.rules.acceptance import AcceptanceRule


class SpeculativeDecoder:
    """Draft-then-verify decoding of one prompt per call."""

    def __init__(
        self,
        pair: ModelPair,
        rule: AcceptanceRule,
        window: int,
        max_new_tokens: int,
        sampling: Sampling | None = None,
    ) -> None:
        self.rule = rule
        self.sampling = sampling
        self.decoder = BatchedDecoder(
            pair.target, pair.draft, pair.vocab_size, pair.eos_token_ids, window, max_new_tokens, batch_size=1
        )

    def generate(self, prompt: list[int], seed: int | None = None) -> Generation:
        """Decode ``prompt`` (sampled: with the Sampling's seed, or ``seed``)."""
        sampling = self.sampling
        if sampling is not None and seed is not None:
            sampling = replace(sampling, seed=seed)
        return self.decoder.generate([Request(list(prompt), self.rule, sampling)], progress=False)[0]
