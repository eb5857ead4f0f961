"""Promotion gates against training-free rules: the head must beat the best rule at the accuracy budget."""

from autojudge.registry.versions import check_gates


def card(judge_mat: float, judge_accuracy: float = 1.0, rule_mat: float = 10.0) -> dict:
    rows = [
        {"method": "target", "accuracy": 1.0, "mat": 1.0, "setting": "target alone"},
        {"method": "exact", "accuracy": 1.0, "mat": 7.0, "setting": "exact SD W=16"},
        {"method": "judge", "accuracy": judge_accuracy, "mat": judge_mat, "setting": "judge t=0.5 W=16"},
        {"method": "fsd-js", "accuracy": 1.0, "mat": rule_mat, "setting": "fsd-js t=0.05 W=16"},
        {"method": "fsd-js", "accuracy": 0.9, "mat": 20.0, "setting": "fsd-js t=0.3 W=16"},
    ]
    return {
        "evaluation": {"headline": {"accuracy_drop_vs_exact_sd": 0.0, "mat_gain_vs_exact_sd": 1.5}},
        "comparison": {"splits": {"test": {"target_accuracy": 1.0, "settings": rows}}},
    }


def test_a_head_faster_than_every_rule_passes():
    result = check_gates(card(judge_mat=12.0), max_accuracy_drop=0.01, min_mat_gain=1.2)
    assert result.passed and result.use_instead is None


def test_a_rule_at_least_as_fast_within_the_budget_blocks_promotion_and_is_named():
    result = check_gates(card(judge_mat=9.0), max_accuracy_drop=0.01, min_mat_gain=1.2)
    assert not result.passed
    assert result.use_instead.startswith("FSD (JS) (fsd-js t=0.05 W=16) reaches MAT 10.00")
    assert any("training-free rule" in reason for reason in result.reasons)


def test_a_head_outside_the_budget_loses_to_the_rule():
    result = check_gates(card(judge_mat=30.0, judge_accuracy=0.95), max_accuracy_drop=0.01, min_mat_gain=1.2)
    assert not result.passed and "no threshold within the budget" in result.use_instead
    # a wider budget admits the head, and it beats the fast but inaccurate rule setting
    wider = check_gates(card(judge_mat=30.0, judge_accuracy=0.95), max_accuracy_drop=0.05, min_mat_gain=1.2)
    assert wider.passed


def test_cards_without_a_comparison_keep_the_old_gates():
    plain = {"evaluation": card(1.0)["evaluation"]}
    assert check_gates(plain, 0.01, 1.2).passed
