"""The sampled comparison's bookkeeping: which points it decodes, its intervals, and its tables."""

import numpy as np
import pytest

from autojudge.errors import InputError
from autojudge.evaluation.sampled import (
    EXACT,
    greedy_and_sampled_markdown,
    method_figures,
    sampled_markdown,
    sampled_section,
    settings_chosen_in,
)
from autojudge.params import CompareParams, load_params


def _row(setting: str, method: str, threshold: float) -> dict:
    return {"setting": setting, "method": method, "window": 16, "k": 0, "threshold": threshold, "rate": 0.5}


def test_the_chosen_points_of_every_budget_are_decoded_once_each():
    comparison = {
        "validation": [_row("fsd-tv t=0.1 W=16", "fsd-tv", 0.1), _row("fly t=0.3 W=16", "fly", 0.3)],
        "chosen": {
            "1": {"fsd-tv": "fsd-tv t=0.1 W=16", "fly": None, "exact": "exact SD W=16"},
            "2": {"fsd-tv": "fsd-tv t=0.1 W=16", "fly": "fly t=0.3 W=16"},
        },
    }
    settings = settings_chosen_in(comparison)
    assert [(s.method, s.threshold, s.window) for s in settings] == [("fsd-tv", 0.1, 16), ("fly", 0.3, 16)]
    assert [s.name for s in settings] == ["fsd-tv t=0.1 W=16", "fly t=0.3 W=16"]


@pytest.fixture
def figures():
    """Two problems, two seeds: exact solves 2 of 4, the rule 1 of 4 at twice exact's MAT."""
    per_problem = {
        EXACT: np.array([[2.0, 40.0, 20.0], [0.0, 40.0, 20.0]]),
        "rule t=1 W=16": np.array([[1.0, 40.0, 10.0], [0.0, 40.0, 10.0]]),
    }
    shift = np.array([[4.0], [0.0]])  # summed total variation along exact's trajectories
    return method_figures(per_problem, shift, list(per_problem), 2, CompareParams())


def test_figures_pool_seeds_per_problem_and_carry_intervals(figures):
    exact, rule = figures["methods"][EXACT], figures["methods"]["rule t=1 W=16"]
    assert (exact["accuracy"], rule["accuracy"]) == (0.5, 0.25)
    assert rule["accuracy_drop"]["value"] == pytest.approx(0.25)
    assert rule["mat_gain_vs_exact_sd"]["value"] == pytest.approx(2.0)
    assert rule["shift_tv_per_token"]["value"] == pytest.approx(4.0 / 80.0)
    assert rule["shift_tv_per_token"]["low"] <= 0.05 <= rule["shift_tv_per_token"]["high"]
    assert rule["per_problem"]["shift_tv_sum"] == [4.0, 0.0]


def test_the_card_sets_greedy_and_sampled_figures_side_by_side(figures):
    result = {
        "enabled": True,
        "temperature": 0.7,
        "top_p": 1.0,
        "seeds": [0, 1],
        "splits": {"test": {"problems": 2, **figures}},
    }
    section = sampled_section(result)
    assert "per_problem" not in section["splits"]["test"]["methods"]["rule t=1 W=16"]
    greedy = {"value": 0.01, "low": 0.0, "high": 0.02}
    comparison = {"splits": {"test": {"table": {"rule": {"1": {"setting": "rule t=1 W=16", "accuracy_drop": greedy,
                  "mat_gain_vs_exact_sd": {"value": 1.5, "low": 1.4, "high": 1.6}}, "2": None}}}}}  # fmt: skip
    lines = greedy_and_sampled_markdown(section, comparison)
    assert "| rule t=1 W=16 | +1.0 [+0.0, +2.0] | 1.50x [1.40, 1.60] | +25.0 [" in lines[-1]
    assert "temperature 0.7" in sampled_markdown(result) and "rule t=1 W=16" in sampled_markdown(result)


def test_a_pair_the_reference_engine_cannot_decode_shows_no_shift(figures):
    """An EAGLE head: accuracy and MAT from vLLM, no total variation claimed."""
    per_problem = {
        name: np.array([row["per_problem"][key] for key in ("solved", "tokens", "target_passes")]).T
        for name, row in figures["methods"].items()
    }
    without = method_figures(per_problem, None, list(per_problem), 2, CompareParams())
    rule = without["methods"]["rule t=1 W=16"]
    assert rule["shift_tv_per_token"] is None and "shift_tv_sum" not in rule["per_problem"]
    assert rule["mat_gain_vs_exact_sd"] == figures["methods"]["rule t=1 W=16"]["mat_gain_vs_exact_sd"]
    result = {
        "temperature": 0.7,
        "top_p": 1.0,
        "seeds": [0, 1],
        "splits": {"test": {"problems": 2, **without}},
    }
    assert sampled_markdown(result).splitlines()[-1].endswith("| 2.00x [2.00, 2.00] | - |")


def test_a_sampled_gate_needs_stage_sampled_at_its_temperature(tmp_path):
    (tmp_path / "params.yaml").write_text("promote: {temperature: 0.9}\n")
    with pytest.raises(
        InputError, match=r"promote\.temperature 0\.9 needs stage sampled at that temperature"
    ):
        load_params(tmp_path / "params.yaml")
