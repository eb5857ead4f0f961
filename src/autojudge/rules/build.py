"""A rule config -> the decision object the reference engines and the vLLM plugin verify with."""

from __future__ import annotations

from autojudge.errors import InputError
from autojudge.heads.artifact import JudgeHead
from autojudge.rules.acceptance import AcceptanceRule, ExactMatch, JudgeRule, TopK
from autojudge.rules.config import FSD_PUBLISHED, RuleConfig, fly_window
from autojudge.rules.fly import FlyRule
from autojudge.rules.training_free import EntropyRule, FuzzyRule, KLMaskRule


def build_rule(
    config: RuleConfig, num_speculative_tokens: int, head: JudgeHead | None = None
) -> AcceptanceRule:
    """The rule ``config`` names, for windows of ``num_speculative_tokens`` draft tokens (FLy's window
    is checked against it); ``head`` is the judge or SelfJudge head of a head rule."""
    rule, threshold = config.rule, config.threshold
    if rule == "exact":
        return ExactMatch()
    if rule == "topk":
        assert config.top_k is not None
        return TopK(config.top_k)
    if config.needs_head:
        if head is None:
            raise InputError(f"autojudge: rule {rule!r} needs a judge head")
        return JudgeRule(head, threshold)
    assert threshold is not None  # RuleConfig requires it of every training-free rule
    if rule == "fly":
        window = fly_window(config.fly_window_size, num_speculative_tokens)
        return FlyRule(threshold, window, config.fly_entropy_top_k)
    if rule == "kl-mask":
        return KLMaskRule(threshold, config.confidence)
    if rule.endswith("-entropy"):
        return EntropyRule(threshold, rule.removesuffix("-entropy"))
    divergence = rule.removeprefix("fsd-").removesuffix("-published")
    return FuzzyRule(threshold, divergence, published=rule in FSD_PUBLISHED)
