"""Building decoders and acceptance rules from names, as the command line and stages give them."""

from __future__ import annotations

from autojudge.decoding.greedy import GreedyDecoder
from autojudge.decoding.rules import AcceptanceRule, ExactMatch, TopK
from autojudge.decoding.speculative import SpeculativeDecoder
from autojudge.errors import InputError
from autojudge.models.pair import ModelPair

RULES = ("exact", "topk")


def build_rule(name: str, k: int = 4) -> AcceptanceRule:
    """The acceptance rule called ``name`` (``k`` is used by top-K)."""
    if name == "exact":
        return ExactMatch()
    if name == "topk":
        if k < 1:
            raise InputError(f"top-K needs k >= 1, got {k}")
        return TopK(k)
    raise InputError(f"unknown acceptance rule {name!r}; known rules: {', '.join(RULES)}")


def target_only(pair: ModelPair, max_new_tokens: int) -> GreedyDecoder:
    return GreedyDecoder(pair.target, pair.vocab_size, pair.eos_token_ids, max_new_tokens, role="target")


def draft_only(pair: ModelPair, max_new_tokens: int) -> GreedyDecoder:
    return GreedyDecoder(pair.draft, pair.vocab_size, pair.eos_token_ids, max_new_tokens, role="draft")


def speculative(
    pair: ModelPair, rule: AcceptanceRule, window: int, max_new_tokens: int
) -> SpeculativeDecoder:
    if window < 1:
        raise InputError(f"the draft window must be at least 1, got {window}")
    return SpeculativeDecoder(pair, rule, window, max_new_tokens)
