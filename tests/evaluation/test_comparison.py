"""The comparison protocol: grids of equal size decoded on validation, points chosen there, decoded on
test, intervals, and a verdict that names a winner only when its interval says so."""

import pytest
import torch
from fake_comparison import fake_ceiling

import autojudge.evaluation.comparison_decode as comparison_decode
from autojudge.evaluation.comparison import (
    best_within,
    choose_points,
    chosen_settings,
    decision,
    markdown,
    split_table,
)
from autojudge.evaluation.comparison_decode import compare_methods
from autojudge.evaluation.figures import ProblemFigures
from autojudge.evaluation.scoring import EvalSummary
from autojudge.evaluation.sweep import Setting
from autojudge.features.spec import FeatureSpec
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


def test_points_are_chosen_per_budget_from_the_validation_rows():
    chosen = choose_points(ROWS, [0.01, 0.02])
    assert chosen["1"] == {"judge": "judge 12.0", "fsd-js": "fsd-js 10.0", "topk": None, "exact": "exact 7.0"}
    assert chosen["2"]["fsd-js"] == "fsd-js 13.0" and chosen["2"]["judge"] == "judge 12.0"
    # a method whose every probe was stopped on validation is still listed, with no point
    assert choose_points(ROWS, [0.01], [{"method": "fly", "setting": "fly t=0.5 W=8"}])["1"]["fly"] is None


def _head() -> JudgeHead:
    return JudgeHead(
        torch.ones(2), 0.0, 0.5, FeatureSpec("target", 2, 2), "toy", "arith", "h",
        {"thresholds_by_recall": {"0.99": 0.1, "0.7": 0.6}},
    )  # fmt: skip


def test_the_test_splits_decode_the_chosen_points_then_the_baselines():
    settings = [Setting("judge", 16, threshold=t, rate=r) for t, r in ((0.1, 0.5), (0.6, 1.0))]
    settings += [Setting("topk", 16, k=2, rate=0.5), Setting("exact", 16), Setting("target")]
    chosen = {"1": {"judge": settings[1].name, "topk": None, "exact": None}, "2": {"judge": settings[1].name}}
    assert [s.name for s in chosen_settings(settings, chosen)] == [
        settings[1].name,
        "exact SD W=16",
        "target alone",
    ]


def figures(correct: list[bool], tokens: list[int], passes: list[int]) -> list[ProblemFigures]:
    return [
        ProblemFigures(str(i), c, t, p)
        for i, (c, t, p) in enumerate(zip(correct, tokens, passes, strict=True))
    ]


N = 40
RIGHT = [True] * N
TARGET = figures(RIGHT, [60] * N, [60] * N)
EXACT = figures(RIGHT, [60] * N, [20] * N)  # MAT 3
FAST = figures(RIGHT, [60] * N, [10] * N)  # MAT 6
ALMOST = figures(RIGHT, [60] * N, [9, 10] * (N // 2))  # MAT 6.3
NOISY = figures(RIGHT, [60] * N, [6, 14] * (N // 2))  # MAT 6, varies a lot per problem
SLOW_HEAD = figures(RIGHT, [60] * N, [12] * N)  # MAT 5
WRONG = figures([i >= 4 for i in range(N)], [60] * N, [6] * N)  # 10 points worse, MAT 10


def _table(test: dict[str, list[ProblemFigures]], chosen: dict) -> dict:
    validation = {name: {"accuracy": 1.0, "mat": 1.0} for name in test}
    return split_table(chosen, test, validation, 300, 0)


def test_a_winner_needs_an_interval_above_one():
    test = {"target alone": TARGET, "exact SD W=8": EXACT, "fsd-tv": FAST, "judge": SLOW_HEAD, "topk": WRONG}
    chosen = {"1": {"exact": "exact SD W=8", "fsd-tv": "fsd-tv", "judge": "judge", "topk": "topk"}}
    table = _table(test, chosen)
    assert table["table"]["topk"]["1"]["within_budget"] is False  # -10 points on test
    assert table["table"]["fsd-tv"]["1"]["mat_gain_vs_exact_sd"] == {"value": 2.0, "low": 2.0, "high": 2.0}
    verdict = decision(table, "1", test, 300, 0)
    assert verdict["winner"] == "fsd-tv" and verdict["runner_up"] == "judge"
    assert verdict["ratio_vs_runner_up"]["low"] == pytest.approx(1.2)
    assert verdict["head_vs_best_rule"]["rule"] == "fsd-tv" and verdict["head_vs_best_rule"]["high"] < 1
    text = markdown(_comparison(table, verdict))
    assert "**FSD (TV) wins**" in text and "MAT ratio over AutoJudge head 1.20x [1.20, 1.20]" in text
    assert "match-or variant" in text and "| top-K | topk |" in text and "| no |" in text


def test_without_a_significant_gap_the_cheaper_method_is_recommended():
    test = {"target alone": TARGET, "exact SD W=8": EXACT, "judge": ALMOST, "kl-mask": NOISY}
    chosen = {"1": {"exact": "exact SD W=8", "judge": "judge", "kl-mask": "kl-mask"}}
    table = _table(test, chosen)
    verdict = decision(table, "1", test, 300, 0)
    assert verdict["fastest"] == "judge" and verdict["winner"] is None
    assert verdict["ratio_vs_runner_up"]["low"] < 1 < verdict["ratio_vs_runner_up"]["high"]
    assert verdict["recommended"] == "kl-mask"  # training-free: no mining, no training
    assert "**no significant difference**" in markdown(_comparison(table, verdict))


def test_a_split_outside_the_targets_competence_has_no_winner():
    wrong = figures([False] * N, [60] * N, [60] * N)
    test = {"target alone": wrong, "exact SD W=8": EXACT, "judge": FAST}
    table = _table(test, {"1": {"exact": "exact SD W=8", "judge": "judge"}})
    verdict = decision(table, "1", test, 300, 0)
    assert verdict["winner"] is None and verdict["outside_competence"]
    assert "outside its competence" in markdown(_comparison(table, verdict))


def _comparison(table: dict, verdict: dict) -> dict:
    protocol = {"validation_split": "validation", "validation_examples": 40, "rates": [0.5, 1.0], "window": 8}
    return {
        "protocol": protocol,
        "budgets": ["1"],
        "splits": {"test": table},
        "decisions": {"test": {"1": verdict}},
    }


def test_test_answers_cannot_change_a_chosen_point(params, tmp_path, monkeypatch):
    """The whole protocol with a fake decoder: flipping every test answer changes the test figures,
    never the points chosen on validation; the rate search brackets each chosen point from above."""
    head_path = _head().save(tmp_path / "head.safetensors")
    flipped = {"value": False}
    decoded = []

    def fake_run_settings(params, settings, split, limit, head, more_heads, folds, loss_limit=None):
        outcomes = []
        for setting in settings:
            mat = 1.0 + setting.threshold + setting.k + (setting.method == "exact")
            correct = setting.threshold < 0.5 if setting.method != "topk" else setting.k < 3
            if split == "test" and flipped["value"]:
                correct = not correct
            decoded.append((split, setting.method, setting.rate))
            problems = [ProblemFigures(str(i), correct, 60, round(60 / mat)) for i in range(10)]
            summary = EvalSummary(setting.name, 10, float(correct), mat, 600, 10 * round(60 / mat), 0, 0.0)
            outcomes.append((setting, summary, problems))
        return outcomes

    def fake_scores(params, heads):  # sorted scores at ten validation mismatches
        thresholds = torch.linspace(0.05, 0.95, 10)
        return {
            "judge": thresholds,
            "fsd-tv": thresholds,
            "topk": torch.tensor([2.0, 2, 3, 3, 4, 4, 5, 5, 6, 6]),
        }

    monkeypatch.setattr(comparison_decode, "run_settings", fake_run_settings)
    monkeypatch.setattr(comparison_decode, "method_scores", fake_scores)
    fake_ceiling(monkeypatch, comparison_decode)
    compare = params.compare.model_copy(
        update={"splits": ["test"], "rates": [0.25, 0.5, 0.75, 1.0], "refine": 1}
    )
    settings = params.model_copy(update={"compare": compare})
    first, _ = compare_methods(settings, head_path, None)
    assert sorted(r for split, m, r in decoded if m == "fsd-tv" and split == "validation") == [
        0.25,
        0.375,
        0.5,
        0.75,
    ]
    flipped["value"] = True
    second, rows = compare_methods(settings, head_path, None)
    assert first["chosen"] == second["chosen"]
    assert (
        first["chosen"]["1"]["fsd-tv"] == "fsd-tv t=0.4 W=32" and first["chosen"]["1"]["topk"] == "top-2 W=32"
    )
    assert first["splits"]["test"]["target_accuracy"] != second["splits"]["test"]["target_accuracy"]
    assert not first["splits"]["test"]["table"]["fsd-tv"]["1"]["grid_edge"]  # 0.5 above it lost
    assert "(grid edge)" not in markdown(first)
    assert set(rows) == {"validation", "test"}
