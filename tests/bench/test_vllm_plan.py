"""The vLLM benchmark's plan: its settings' names, the rounds' orders, the comparison's decodes of the timed
settings, and the checks that refuse a plan."""

from __future__ import annotations

import pytest

from autojudge.bench.vllm_plan import (
    check_plan,
    plan_engines,
    plan_rounds,
    round_orders,
    timed_phase,
    timed_windows,
    tuning_passes,
    tuning_phases,
)
from autojudge.bench.vllm_settings import (
    EXACT,
    OVERHEAD,
    STOCK,
    TARGET,
    compared_correct,
    head_points,
    recommendations,
    runs_at,
    speculative_settings,
)
from autojudge.errors import InputError
from autojudge.params import BenchParams

NAMES = ["target", "sd_stock", "sd_exact", "autojudge_t0.5", "recommended_1pt", "judge_t0"]


def _positions(orders: list[list[str]]) -> dict[str, list[int]]:
    return {name: [order.index(name) for order in orders] for name in NAMES}


@pytest.mark.parametrize("rounds", [2, 4, 6])
def test_every_pair_of_rounds_gives_every_setting_the_same_mean_place(rounds) -> None:
    orders = round_orders(NAMES, rounds, seed=0)
    assert all(sorted(order) == sorted(NAMES) for order in orders)
    middle = (len(NAMES) - 1) / 2
    assert all(sum(places) / rounds == middle for places in _positions(orders).values())


def test_twice_as_many_rounds_as_settings_put_every_setting_at_every_place_twice() -> None:
    orders = round_orders(NAMES, 2 * len(NAMES), seed=3)
    assert all(
        sorted(places) == sorted(2 * list(range(len(NAMES)))) for places in _positions(orders).values()
    )


def test_round_orders_are_seeded() -> None:
    assert round_orders(NAMES, 3, seed=1) == round_orders(NAMES, 3, seed=1)
    assert round_orders(NAMES, 3, seed=1) != round_orders(NAMES, 3, seed=2)
    assert round_orders(NAMES, 0, seed=1) == []
    rounds = plan_rounds(NAMES, 1, 2, seed=0)  # tuning rounds, then timed ones balanced on their own
    assert [tuning for tuning, _ in rounds] == [True, False, False]
    assert [order for _, order in rounds[1:]] == round_orders(NAMES, 2, seed=0)


def test_settings_and_plan_checks() -> None:
    names = [s.name for s in speculative_settings([0.5, 0.8814336657, 0.5])]
    assert names == ["sd_exact", "autojudge_t0.5", "autojudge_t0.8814"]
    bench = BenchParams()
    check_plan(bench, 6)
    with pytest.raises(InputError, match=r"bench\.overhead_window 32 must be one of bench\.windows \[1, 8\]"):
        check_plan(bench.model_copy(update={"overhead_window": 32}))
    with pytest.raises(InputError, match=r"bench\.batch_sizes must be distinct positive sizes including 1"):
        check_plan(bench.model_copy(update={"batch_sizes": [8, 32]}))
    with pytest.raises(InputError, match=r"bench\.tuning_repeats must be >= 1, got 0"):
        check_plan(bench.model_copy(update={"tuning_repeats": 0}))
    with pytest.raises(
        InputError, match=r"bench\.accuracy_problems 64 need 64 problems, but split 'test' has 24"
    ):
        check_plan(bench.model_copy(update={"accuracy_problems": 64}), 24)
    together = bench.model_copy(update={"engines_together": True, "problems": 20, "tuning_problems": 10})
    check_plan(together, 30)  # windows tuned first, on the 10 problems after the 20 timed ones
    with pytest.raises(
        InputError, match=r"bench\.tuning_problems 10 need 30 problems, but split 'test' has 29"
    ):
        check_plan(together, 29)
    with pytest.raises(InputError, match=r"bench\.tuning_problems must be >= 1, got 0"):
        check_plan(bench.model_copy(update={"tuning_problems": 0}))


def test_one_window_has_no_tuning_pass() -> None:
    bench = BenchParams()
    assert tuning_passes(bench) == bench.tuning_repeats == 1  # windows [1, 8]: one pass chooses
    assert tuning_passes(bench.model_copy(update={"windows": [8], "tuning_repeats": 3})) == 0


def _served(setting: str, method: str, config: dict | None) -> dict:
    return {"setting": setting, "method": method, "autojudge": config}


def test_recommendations_are_timed_once_each_as_they_are_served() -> None:
    """A rule that reads the drafter's logits or another head gets an engine started with its served config;
    the others are request overrides on the plugin engine (without the engine's keys); exact SD is stock SD."""
    head = "heads/arith/head.safetensors"
    serving = {
        "1": _served(
            "target-entropy t=0.7 W=32", "target-entropy", {"rule": "target-entropy", "threshold": 0.7}
        ),
        "2": _served(
            "target-entropy t=0.7 W=32", "target-entropy", {"rule": "target-entropy", "threshold": 0.7}
        ),
        "3": _served(
            "kl-mask t=4.5 W=32", "kl-mask", {"rule": "kl-mask", "threshold": 4.5, "confidence": 0.9}
        ),
        "4": _served("judge t=0.1 W=32", "judge", {"rule": "judge", "threshold": 0.1, "judge_head": head}),
        "5": _served(
            "selfjudge t=0.2 W=32", "selfjudge", {"rule": "selfjudge", "threshold": 0.2, "judge_head": "s"}
        ),
        "6": _served("exact SD W=32", "exact", None),
    }
    found = {r.setting.name: r for r in recommendations(serving, head)}
    assert list(found) == ["recommended_1+2pt", "recommended_3pt", "recommended_4pt", "recommended_5pt"]
    assert found["recommended_1+2pt"].setting.override == {"rule": "target-entropy", "threshold": 0.7}
    assert found["recommended_4pt"].setting.override == {"rule": "judge", "threshold": 0.1}
    assert found["recommended_3pt"].own_engine and found["recommended_5pt"].own_engine
    assert (
        found["recommended_3pt"].setting.override is None
        and found["recommended_3pt"].config["confidence"] == 0.9
    )


def test_fly_runs_only_where_its_window_fits() -> None:
    assert not runs_at({"rule": "fly", "threshold": 0.3}, 1) and runs_at({"rule": "fly", "threshold": 0.3}, 8)
    assert not runs_at({"rule": "fly", "threshold": 0.3, "fly_window_size": 8}, 8)
    assert runs_at({"rule": "fsd-tv", "threshold": 0.1}, 1)


def test_the_heads_chosen_points_come_from_the_comparison() -> None:
    comparison = {
        "validation": [
            {"setting": "judge t=0.01 W=32", "threshold": 0.01},
            {"setting": "judge t=0.2 W=32", "threshold": 0.2},
        ],
        "chosen": {
            "1": {"judge": "judge t=0.01 W=32"},
            "2": {"judge": "judge t=0.01 W=32"},
            "3": {"judge": None},
        },
    }
    assert head_points(comparison) == [0.01] and head_points({}) == []


def test_engines_serve_each_setting_at_its_windows_stock_ones_first() -> None:
    """Every setting at its windows (one grid, or each at its tuned window): the target alone, stock SD's
    engines, then per window one plugin engine for the request overrides and one per own-engine config."""
    head_rule, fsd = {"rule": "judge", "judge_head": "h"}, {"rule": "fsd-kl", "threshold": 0.2}
    on_plugin = {EXACT: {"rule": "exact"}, "autojudge_t0.5": {"rule": "judge", "threshold": 0.5}}
    on_plugin[OVERHEAD] = {"rule": "judge", "threshold": 0.0}
    windows_of = {TARGET: [0], STOCK: [4], EXACT: [8], "autojudge_t0.5": [4], OVERHEAD: [8], "rec": [8]}
    engines = plan_engines(windows_of, on_plugin, {"rec": fsd}, head_rule)
    assert [(e.window, e.plugin, e.rule, list(e.settings)) for e in engines] == [
        (0, False, None, [TARGET]),
        (4, False, None, [STOCK]),
        (4, True, head_rule, ["autojudge_t0.5"]),
        (8, True, head_rule, [EXACT, OVERHEAD]),
        (8, True, fsd, ["rec"]),
    ]
    assert engines[3].settings[OVERHEAD] == {"rule": "judge", "threshold": 0.0}
    # one window's tuning phase: no target alone
    assert [e.window for e in plan_engines({STOCK: [8], EXACT: [8]}, on_plugin, {}, head_rule)] == [8, 8]


def test_accuracy_beside_a_setting_is_the_comparisons_decode_of_it(comparison) -> None:
    (recommended,) = recommendations(
        {
            "1": {
                "autojudge": {"rule": "judge", "threshold": 0.5},
                "method": "judge",
                "setting": "judge t=0.5 W=8",
            }
        },
        "head",
    )
    compared = compared_correct(comparison, [0.5, 0.7], [recommended])
    # the lossless settings read exact SD's decode; the judge at 0.7 was not decoded: left out
    assert {name: setting for name, (setting, _) in compared.items()} == {
        TARGET: "target alone",
        STOCK: "exact SD W=8",
        EXACT: "exact SD W=8",
        "autojudge_t0.5": "judge t=0.5 W=8",
        recommended.setting.name: "judge t=0.5 W=8",
    }
    assert compared["autojudge_t0.5"][1] == [True] * 7 + [False]
    assert compared_correct({}, [0.5], []) == {}  # no comparison: no accuracy beside any setting


def _phase_outline(phase) -> list[tuple[list[tuple[int, bool]], list[tuple[bool, int]]]]:
    """Each group's engines (window, plugin) and rounds (tuning, settings)."""
    return [
        ([(e.window, e.plugin) for e in g.engines], [(tuning, len(order)) for tuning, order in g.rounds])
        for g in phase.groups
    ]


def test_the_plan_is_plain_data_with_every_phase_before_any_engine(plan_of, comparison) -> None:
    """The plan holds the settings, their windows and the prompts; its phases give the engines and every
    round's order, one engine after another (the target alone without tuning rounds) or all together."""
    bench = BenchParams(windows=[1, 8], problems=4, accuracy_problems=2, repeats=2, tuning_repeats=1)
    plan = plan_of(bench, comparison)
    assert plan.windows_of == {
        TARGET: [0], STOCK: [1, 8], EXACT: [1, 8], "autojudge_t0.5": [1, 8], OVERHEAD: [8]
    }  # fmt: skip
    assert len(plan.prompts) == 4 and len(plan.accuracy_prompts) == 2 and plan.tuning_prompts == []
    assert plan.compared["autojudge_t0.5"][0] == "judge t=0.5 W=8" and tuning_phases(plan) == []
    one_by_one = timed_phase(plan, plan.windows_of)
    assert _phase_outline(one_by_one) == [
        ([(0, False)], [(False, 1)] * 2),
        ([(1, False)], [(True, 1), (False, 1), (False, 1)]),
        ([(8, False)], [(True, 1), (False, 1), (False, 1)]),
        ([(1, True)], [(True, 2), (False, 2), (False, 2)]),
        ([(8, True)], [(True, 3), (False, 3), (False, 3)]),
    ]
    together = plan_of(bench.model_copy(update={"engines_together": True, "tuning_problems": 2}), comparison)
    assert len(together.tuning_prompts) == 2 and not together.models.in_process
    phases = tuning_phases(together)  # one per window, every engine of it alive at once, batch size 1
    assert [(w, _phase_outline(p), p.batch_sizes) for w, p in phases] == [
        (1, [([(1, False), (1, True)], [(True, 3)])], [1]),
        (8, [([(8, False), (8, True)], [(True, 3)])], [1]),
    ]
    chosen = {STOCK: 1, EXACT: 8, "autojudge_t0.5": 8}
    timed = timed_phase(together, timed_windows(chosen))  # no tuning round left: the windows are chosen
    assert _phase_outline(timed) == [([(0, False), (1, False), (8, True)], [(False, 5)] * 2)]
    assert timed.groups[0].engines[2].settings == {
        EXACT: {"rule": "exact"}, "autojudge_t0.5": {"rule": "judge", "threshold": 0.5},
        OVERHEAD: {"rule": "judge", "threshold": 0.0},
    }  # fmt: skip
