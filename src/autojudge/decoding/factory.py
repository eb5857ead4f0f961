"""Building the reference decoders of a pair (rules by name: ``autojudge.rules``)."""

from __future__ import annotations

from autojudge.decoding.greedy import GreedyDecoder
from autojudge.decoding.sampling import Sampling
from autojudge.decoding.speculative import SpeculativeDecoder
from autojudge.errors import InputError
from autojudge.models.pair import ModelPair
from autojudge.rules.acceptance import AcceptanceRule


def target_only(pair: ModelPair, max_new_tokens: int) -> GreedyDecoder:
    return GreedyDecoder(pair.target, pair.vocab_size, pair.eos_token_ids, max_new_tokens, role="target")


def draft_only(pair: ModelPair, max_new_tokens: int) -> GreedyDecoder:
    return GreedyDecoder(pair.draft, pair.vocab_size, pair.eos_token_ids, max_new_tokens, role="draft")


def speculative(
    pair: ModelPair, rule: AcceptanceRule, window: int, max_new_tokens: int, sampling: Sampling | None = None
) -> SpeculativeDecoder:
    if window < 1:
        raise InputError(f"the draft window must be at least 1, got {window}")
    return SpeculativeDecoder(pair, rule, window, max_new_tokens, sampling)
