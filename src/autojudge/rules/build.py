"""A rule config -> the decision object the reference engines and the vLLM plugin verify with."""

from __future__ import annotations

from autojudge.errors import InputError
from autojudge.heads.artifact import JudgeHead
from autojudge.rules.acceptance import AcceptanceRule, ExactMatch, JudgeRule, TopK
from autojudge.rules.config import FSD_PUBLISHED, RuleConfig, fly_window
from autojudge.rules.fly import FlyRule
from autojudge.rules.training_free import EntropyRule, FuzzyRule, KLMaskRule


def rule_class(rule: str) -> type[AcceptanceRule]:
    """The class that decides rule ``rule`` (a rule name, or a head's)."""
    if rule == "exact":
        return ExactMatch
    if rule == "topk":
        return TopK
    if rule == "fly":
        return FlyRule
    if rule == "kl-mask":
        return KLMaskRule
    if rule.endswith("-entropy"):
        return EntropyRule
    if rule.startswith("fsd-"):
        return FuzzyRule
    return JudgeRule


def threshold_at_score(rule: str, cut: float) -> float:
    """The threshold of ``rule`` that accepts exactly the mismatches whose ``score`` is below ``cut``."""
    return rule_class(rule).threshold_at(cut)


def build_rule(
    config: RuleConfig, num_speculative_tokens: int, head: JudgeHead | None = None
) -> AcceptanceRule:
    """The rule ``config`` names, for windows of ``num_speculative_tokens`` draft tokens (FLy's window
    is checked against it); ``head`` is the judge or SelfJudge head of a head rule."""
    rule, threshold = config.rule, config.threshold
    kind = rule_class(rule)
    if kind is ExactMatch:
        return ExactMatch()
    if kind is TopK:
        assert config.top_k is not None
        return TopK(config.top_k)
    if config.needs_head:
        if head is None:
            raise InputError(f"autojudge: rule {rule!r} needs a judge head")
        return JudgeRule(head, threshold)
    assert threshold is not None  # RuleConfig requires it of every training-free rule
    if kind is FlyRule:
        window = fly_window(config.fly_window_size, num_speculative_tokens)
        return FlyRule(threshold, window, config.fly_entropy_top_k)
    if kind is KLMaskRule:
        return KLMaskRule(threshold, config.confidence)
    if kind is EntropyRule:
        return EntropyRule(threshold, rule.removesuffix("-entropy"))
    divergence = rule.removeprefix("fsd-").removesuffix("-published")
    return FuzzyRule(threshold, divergence, published=rule in FSD_PUBLISHED)
