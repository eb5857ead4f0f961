"""Every registry name builds the decision object the engines and the plugin share."""

import pytest
import torch

from autojudge.errors import InputError
from autojudge.features.spec import FeatureSpec
from autojudge.heads.artifact import JudgeHead
from autojudge.rules.acceptance import ExactMatch, JudgeRule, TopK
from autojudge.rules.build import build_rule
from autojudge.rules.config import RULES, RuleConfig
from autojudge.rules.fly import FlyRule
from autojudge.rules.training_free import EntropyRule, FuzzyRule, KLMaskRule

HEAD = JudgeHead(torch.zeros(4), 0.0, 0.3, FeatureSpec("target", 4, 2), "toy", "arith", "vocab")
KINDS = {
    "exact": ExactMatch,
    "topk": TopK,
    "judge": JudgeRule,
    "judge-context": JudgeRule,
    "selfjudge": JudgeRule,
    "kl-mask": KLMaskRule,
    "target-entropy": EntropyRule,
    "draft-entropy": EntropyRule,
    "fly": FlyRule,
}


@pytest.mark.parametrize("name", RULES)
def test_every_name_builds_its_rule(name):
    built = build_rule(RuleConfig(name, threshold=0.1, top_k=3), 8, HEAD)
    assert isinstance(built, KINDS.get(name, FuzzyRule))
    if isinstance(built, FuzzyRule | KLMaskRule | EntropyRule):
        assert built.name == name and built.threshold == 0.1
    assert built.keeps_matches == (not name.endswith("-published"))
    assert built.reads_draft_logits == RuleConfig(name, threshold=0.1, top_k=3).needs_draft_logits


def test_a_head_rule_without_a_head_is_refused_and_takes_the_heads_threshold_by_default():
    with pytest.raises(InputError, match="rule 'selfjudge' needs a judge head"):
        build_rule(RuleConfig("selfjudge"), 8)
    assert build_rule(RuleConfig("judge"), 8, HEAD).threshold == 0.3
