"""The comparison table: best MAT within an accuracy budget per method, the decision, the settings swept."""

import pytest
import torch

from autojudge.comparison import best_within, comparison_settings, decision, markdown, split_table
from autojudge.errors import InputError
from autojudge.features.hidden_states import FeatureSpec
from autojudge.heads.artifact import JudgeHead


def row(method, accuracy, mat, setting=None):
    return {"method": method, "accuracy": accuracy, "mat": mat, "setting": setting or f"{method} {mat}"}


ROWS = [
    row("target", 0.96, 1.0),
    row("exact", 0.96, 7.0),
    row("judge", 0.95, 12.0),
    row("judge", 0.93, 14.0),
    row("fsd-js", 0.96, 10.0),
    row("fsd-js", 0.94, 13.0),
    row("fsd-js", 0.80, 16.0),
    row("topk", 0.90, 15.0),
]


def test_best_within_budget_is_the_fastest_setting_that_keeps_accuracy():
    assert best_within(ROWS, "judge", 0.96, 0.01)["mat"] == 12.0
    assert best_within(ROWS, "judge", 0.96, 0.03)["mat"] == 14.0
    assert best_within(ROWS, "fsd-js", 0.96, 0.02)["mat"] == 13.0  # a drop of exactly the budget counts
    assert best_within(ROWS, "topk", 0.96, 0.02) is None


def test_table_and_decision():
    table = split_table(ROWS, [0.01, 0.02])
    assert table["target_accuracy"] == 0.96
    assert table["table"]["judge"]["1"]["mat"] == 12.0 and table["table"]["fsd-js"]["2"]["mat"] == 13.0
    assert table["table"]["topk"]["2"] is None
    verdict = decision(table["table"], "1", table["target_accuracy"])
    assert (verdict["winner"], verdict["runner_up"]) == ("judge", "fsd-js")
    assert verdict["gain_vs_runner_up"] == pytest.approx(12 / 10) and verdict[
        "gain_vs_exact_sd"
    ] == pytest.approx(12 / 7)
    assert decision(table["table"], "2", table["target_accuracy"])["winner"] == "fsd-js"
    text = markdown({"budgets": ["1", "2"], "splits": {"test": table}, "decisions": {"test": verdict}})
    assert "| AutoJudge head | 12.00 | 12.00 |" in text and "| top-K | - | - |" in text
    assert "**AutoJudge head** wins" in text and "20.0% above the runner-up FSD (JS)" in text


def test_settings_cover_heads_rules_and_baselines():
    head = JudgeHead(
        torch.ones(2), 0.0, 0.5, FeatureSpec("target", 2, 2), "toy", "arith", "h",
        {"thresholds_by_recall": {"0.99": 0.1, "0.7": 0.6}},
    )  # fmt: skip
    settings = comparison_settings(
        16, {"judge": head, "selfjudge": head}, [0.99, 0.7], [4], {"fsd-js": [0.1, 0.2]}
    )
    methods = [s.method for s in settings]
    assert methods == [
        "judge",
        "judge",
        "judge",
        "selfjudge",
        "selfjudge",
        "selfjudge",
        "fsd-js",
        "fsd-js",
        "topk",
        "exact",
        "target",
    ]
    assert [s.threshold for s in settings[:3]] == [0.1, 0.6, 0.5]  # recall thresholds, then the head's own
    assert settings[2].recall is None
    with pytest.raises(InputError, match="no head threshold"):
        comparison_settings(16, {"judge": head}, [0.9], [], {})
    with pytest.raises(InputError, match="unknown rules"):
        comparison_settings(16, {"judge": head}, [0.7], [], {"random": [0.5]})


def test_a_split_outside_the_targets_competence_has_no_winner():
    table = split_table(ROWS, [0.01])
    verdict = decision(table["table"], "1", 0.3)
    assert verdict["winner"] is None and verdict["outside_competence"]
    text = markdown({"budgets": ["1"], "splits": {"shifted": table}, "decisions": {"shifted": verdict}})
    assert "outside its competence" in text and "wins" not in text
