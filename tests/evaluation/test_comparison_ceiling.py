"""The ceiling in the comparison: the perfect judge's MAT ratio on mined validation problems, each chosen
point's share of it and its acceptance of the labelled important and unimportant mismatches (fake mining,
fake scores, fake decoder: no model)."""

import pytest
from fake_comparison import fake_ceiling, fake_mine_first, fake_run_settings, fake_scores, toy_head

import autojudge.evaluation.comparison_decode as comparison_decode
from autojudge.evaluation.ceiling import ceiling_summary
from autojudge.evaluation.comparison import ceiling_markdown, ceiling_sentence, markdown
from autojudge.evaluation.comparison_ceiling import ceiling_section, chosen_points
from autojudge.evaluation.grids import score_cut
from autojudge.evaluation.setting import Setting


def gain(value: float) -> dict:
    return {"value": value, "low": value - 0.1, "high": value + 0.1}


# two budgets; the head's point is chosen at both, top-K's at one; exact SD is no point
COMPARISON = {
    "protocol": {"window": 8},
    "chosen": {
        "1": {"judge": "judge t=0.4 W=8", "topk": None, "exact": "exact SD W=8"},
        "2": {"judge": "judge t=0.4 W=8", "topk": "top-2 W=8", "exact": "exact SD W=8"},
    },
    "splits": {
        "test": {
            "table": {
                "judge": {"1": {"mat_gain_vs_exact_sd": gain(1.5)}},
                "topk": {"1": None, "2": {"mat_gain_vs_exact_sd": gain(1.0)}},
            }
        }
    },
}


def table_rows(section: dict) -> list[str]:
    """The rows of the ceiling's table, one per chosen point."""
    return [line for line in ceiling_markdown(section).splitlines() if line.startswith("| ") and "W=" in line]


def test_every_chosen_point_but_exact_sd_is_listed_once_with_its_budgets():
    assert chosen_points(COMPARISON["chosen"]) == {
        "judge t=0.4 W=8": {"method": "judge", "budgets": ["1", "2"]},
        "top-2 W=8": {"method": "topk", "budgets": ["2"]},
    }


def test_a_points_share_is_its_gain_over_exact_sd_against_the_ceilings():
    problems = fake_mine_first(None, 8, None)
    accepts = {
        "judge t=0.4 W=8": lambda problem, mismatch: not mismatch.important,  # the perfect judge
        "top-2 W=8": lambda problem, mismatch: mismatch.position == 2,  # only the important ones
    }
    section = ceiling_section(problems, accepts, COMPARISON, "validation", 200, 0)
    # W=8, 24 tokens: exact SD 4 forwards (0-6 | 7-13 | 14-22 | 23), 5 with the important mismatch at 2;
    # the ceiling 3 (0-8 | 9-17 | 18-23), 4 with it (0-2 | 3-11 | 12-20 | 21-23): two problems of 8 have it
    ceiling = section["ratio"]
    assert ceiling["value"] == pytest.approx((2 * 5 + 6 * 4) / (2 * 4 + 6 * 3), abs=1e-4)
    assert ceiling == ceiling_summary(problems, [8], 200, 0)["windows"]["8"]["ratio"]
    assert (section["split"], section["window"], section["problems"], section["important"]) == (
        "validation",
        8,
        8,
        2,
    )
    judge, topk = section["points"]
    assert judge["share_of_ceiling"]["test"] == pytest.approx((1.5 - 1) / (34 / 26 - 1), abs=1e-3)
    assert topk["share_of_ceiling"] == {"test": 0.0}  # no faster than exact SD
    assert judge["accepted"] == {"important": 0.0, "unimportant": 1.0}
    assert topk["accepted"] == {"important": 1.0, "unimportant": 0.0}
    table = table_rows(section)
    assert table == [
        f"| AutoJudge head | judge t=0.4 W=8 (1, 2) | 1.50x [1.40, 1.60] | "
        f"{100 * judge['share_of_ceiling']['test']:.1f}% | 0.0% | 100.0% |",
        "| top-K | top-2 W=8 (2) | 1.00x [0.90, 1.10] | 0.0% | 100.0% | 0.0% |",
    ]
    assert ceiling_sentence(section, "1").startswith(
        f"Against the ceiling (a perfect judge, {ceiling['value']:.2f}x [{ceiling['low']:.2f}, "
        f"{ceiling['high']:.2f}] exact SD's MAT on 8 validation problems), this head's point within 1 point(s) "
        f"reaches {100 * judge['share_of_ceiling']['test']:.1f}% on test of the gain"
    )


def test_without_important_mismatches_their_acceptance_is_not_a_number():
    problems = [p for p in fake_mine_first(None, 8, None) if not any(m.important for m in p.mismatches)]
    section = ceiling_section(problems, {"judge t=0.4 W=8": lambda p, m: True, "top-2 W=8": lambda p, m: True},
                              COMPARISON, "validation", 200, 0)  # fmt: skip
    assert section["points"][0]["accepted"] == {"important": None, "unimportant": 1.0}
    assert "| n/a | 100.0% |" in table_rows(section)[0]


@pytest.mark.parametrize(
    ("setting", "cut"),
    [
        (Setting("judge", 8, threshold=0.3), 0.3),
        (Setting("fsd-kl", 8, threshold=0.5), 0.5),
        (Setting("target-entropy", 8, threshold=1.2), -1.2),  # accept iff entropy > T: score -entropy < -T
        (Setting("fly", 8, threshold=0.7), -0.7),
        (Setting("topk", 8, k=3), 4),  # accept iff rank <= K
    ],
)
def test_the_score_cut_inverts_the_threshold_a_rate_places(setting, cut):
    assert score_cut(setting) == cut


def test_the_comparison_reports_the_ceiling_of_its_window_for_every_chosen_point(
    params, tmp_path, monkeypatch
):
    monkeypatch.setattr(comparison_decode, "run_settings", fake_run_settings)
    monkeypatch.setattr(comparison_decode, "method_scores", fake_scores)
    fake_ceiling(monkeypatch, comparison_decode)
    compare = params.compare.model_copy(update={"bootstrap_samples": 200, "splits": ["test"]})
    settings = params.model_copy(update={"compare": compare})
    result, _ = comparison_decode.compare_methods(settings, toy_head().save(tmp_path / "h.safetensors"), None)
    section = result["ceiling"]
    assert section["problems"] == compare.ceiling_problems and section["window"] == compare.window
    points = {point["setting"]: point for point in section["points"]}
    assert set(points) == set(chosen_points(result["chosen"]))
    for name, point in points.items():
        threshold = next(row["threshold"] for row in result["validation"] if row["setting"] == name)
        k = next(row["k"] for row in result["validation"] if row["setting"] == name)
        setting = Setting(point["method"], compare.window, k=k, threshold=threshold)
        important, unimportant = (4.0, 1.0) if point["method"] == "topk" else (0.55, 0.2)  # the fake scores
        cut = score_cut(setting)
        assert point["accepted"] == {
            "important": float(important < cut),
            "unimportant": float(unimportant < cut),
        }
        test_gain = result["splits"]["test"]["table"][point["method"]][point["budgets"][0]]
        assert point["mat_gain_vs_exact_sd"]["test"] == test_gain["mat_gain_vs_exact_sd"]
    assert "### The ceiling: a perfect judge on 100 validation problems" in markdown(result)
    nothing = params.compare.model_copy(update={"ceiling_problems": 0, "splits": ["test"]})
    without, _ = comparison_decode.compare_methods(
        params.model_copy(update={"compare": nothing}), toy_head().save(tmp_path / "h.safetensors"), None
    )
    assert "ceiling" not in without and "The ceiling" not in markdown(without)
