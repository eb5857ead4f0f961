"""Promotion gates: the headline figures, and the comparison's verdict at the promotion budget (the head
must be within it on test and significantly faster than the best training-free rule)."""

from autojudge.registry.promotion import check_gates

HEADLINE = {"evaluation": {"headline": {"accuracy_drop_vs_exact_sd": 0.0, "mat_gain_vs_exact_sd": 1.5}}}
RULE = {"method": "fsd-js", "setting": "fsd-js t=0.05 W=16"}


def card(ratio: tuple[float, float, float] | None, head_within: bool = True, **verdict) -> dict:
    """A card whose comparison verdict at 1 point has the head's MAT ratio over FSD (JS) ``ratio``."""
    against = None if ratio is None else dict(zip(("value", "low", "high"), ratio, strict=True))
    at_one_point = {
        "best_rule": RULE,
        "head_within_budget": head_within,
        "head_vs_best_rule": against and {"rule": "fsd-js", "setting": RULE["setting"], **against},
        **verdict,
    }
    return {**HEADLINE, "comparison": {"splits": {"test": {}}, "decisions": {"test": {"1": at_one_point}}}}


def test_a_head_significantly_faster_than_every_rule_passes():
    result = check_gates(card((1.3, 1.1, 1.5)), max_accuracy_drop=0.01, min_mat_gain=1.2)
    assert result.passed and result.use_instead is None


def test_a_head_not_significantly_faster_is_refused_and_the_rule_is_named():
    result = check_gates(card((1.1, 0.95, 1.3)), max_accuracy_drop=0.01, min_mat_gain=1.2)
    assert not result.passed and result.use_instead == "FSD (JS) (fsd-js t=0.05 W=16)"
    assert "1.10x [0.95, 1.30]: not significantly above 1" in result.reasons[0]


def test_a_head_outside_the_budget_on_test_is_refused():
    result = check_gates(card(None, head_within=False), max_accuracy_drop=0.01, min_mat_gain=1.2)
    assert not result.passed and result.use_instead == "FSD (JS) (fsd-js t=0.05 W=16)"
    assert "not within 1 point(s) of target greedy on the test split" in result.reasons[0]


def test_a_budget_the_comparison_lacks_or_a_split_outside_competence_is_refused():
    missing = check_gates(card((1.3, 1.1, 1.5)), max_accuracy_drop=0.02, min_mat_gain=1.2)
    assert not missing.passed and "no budget of 2 point(s) (compare.budgets: 1)" in missing.reasons[0]
    outside = check_gates(card(None, outside_competence=True), max_accuracy_drop=0.01, min_mat_gain=1.2)
    assert not outside.passed and "outside the target's competence" in outside.reasons[0]


def test_cards_without_a_comparison_keep_the_headline_gates():
    assert check_gates(HEADLINE, 0.01, 1.2).passed
    assert not check_gates(HEADLINE, 0.01, 1.6).passed  # MAT gain 1.5 < 1.6


def _sampled(drop: float, gain: float, temperature: float = 0.7) -> dict:
    row = {
        "accuracy_drop": {"value": drop, "low": drop - 0.01, "high": drop + 0.01},
        "mat_gain_vs_exact_sd": {"value": gain, "low": gain - 0.1, "high": gain + 0.1},
    }
    split = {"methods": {"judge t=0.1 W=16": row}}
    return {
        "enabled": True,
        "temperature": temperature,
        "head_setting": "judge t=0.1 W=16",
        "splits": {"test": split},
    }


def test_promote_temperature_also_gates_on_the_sampled_figures():
    fast = {**card((1.3, 1.1, 1.5)), "sampled": _sampled(0.0, 1.4)}
    assert check_gates(fast, 0.01, 1.2).passed and check_gates(fast, 0.01, 1.2, temperature=0.7).passed
    lossy = {**card((1.3, 1.1, 1.5)), "sampled": _sampled(0.03, 1.1)}
    assert check_gates(lossy, 0.01, 1.2).passed  # greedy gates only
    reasons = check_gates(lossy, 0.01, 1.2, temperature=0.7).reasons
    assert (
        len(reasons) == 2 and "sampled (T=0.7, test): accuracy drop" in reasons[0] and "1.10x" in reasons[1]
    )
    elsewhere = check_gates(fast, 0.01, 1.2, temperature=1.0)
    assert not elsewhere.passed and "no figures at temperature 1.0" in elsewhere.reasons[0]
