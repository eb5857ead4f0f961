"""The rule registry's names, keys and ranges: one vocabulary for params, eval, the plugin and requests."""

import math

import pytest

from autojudge.errors import InputError
from autojudge.evaluation.comparison import LABELS
from autojudge.rules.config import DIVERGENCES, RULE_FIELDS, RULES, RuleConfig, rule_config
from autojudge.vllm_plugin.config import REQUEST_KEYS, parse_config


def test_every_compared_method_is_a_rule_the_plugin_serves_under_its_name():
    methods = [m for m in LABELS if m != "target"]
    assert sorted(methods) == sorted(RULES)
    for method in methods:
        raw = {"rule": method, "threshold": 0.1, "top_k": 2, "judge_head": "h"}
        assert parse_config(raw).rule == method
    assert set(REQUEST_KEYS) == set(RULE_FIELDS) - set()  # flat vllm_xargs carry every rule key


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"rule": "greedy"}, "unknown rule 'greedy'"),
        ({"rule": "topk", "top_k": 0}, "needs top_k >= 1, got 0"),
        ({"rule": "judge", "threshold": 1.5}, r"'judge' needs a threshold in \[0, 1\], got 1.5"),
        ({"rule": "selfjudge", "threshold": -0.1}, r"in \[0, 1\]"),
        ({"rule": "fsd-js", "threshold": 0.8}, r"in \[0, 0.693147\]"),
        ({"rule": "fsd-tv-published", "threshold": 2.0}, r"in \[0, 1\]"),
        ({"rule": "fsd-kl", "threshold": -1.0}, r"in \[0, inf\]"),
        ({"rule": "target-entropy"}, "needs a threshold"),
        ({"rule": "draft-entropy", "threshold": math.inf}, "must be finite"),
        ({"rule": "kl-mask", "threshold": 0.2, "confidence": 0.0}, r"confidence must be in \(0, 1\]"),
        ({"rule": "fly", "threshold": 0.3, "fly_entropy_top_k": 0}, "fly_entropy_top_k must be positive"),
    ],
)
def test_out_of_range_values_are_refused_naming_the_key(values, message):
    with pytest.raises(InputError, match=message):
        RuleConfig(**values)


def test_keys_round_trip_and_name_only_what_the_rule_reads():
    config = RuleConfig("kl-mask", threshold=0.2, top_k=4, confidence=0.8)
    assert config.keys() == {"rule": "kl-mask", "threshold": 0.2, "confidence": 0.8}
    assert rule_config(config.keys(), "test") == RuleConfig("kl-mask", threshold=0.2, confidence=0.8)
    assert RuleConfig("fly", 0.3).keys() == {"rule": "fly", "threshold": 0.3, "fly_entropy_top_k": 3}
    assert RuleConfig("exact").describe() == "exact"
    with pytest.raises(InputError, match="must name a 'rule'"):
        rule_config({"threshold": 0.1}, "test")


def test_the_registry_knows_every_divergence_without_importing_torch():
    from autojudge.rules.divergence import DIVERGENCES as IMPLEMENTED

    assert sorted(DIVERGENCES) == sorted(IMPLEMENTED)
