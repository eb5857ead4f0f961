"""The vLLM benchmark's plan: its settings' names and the checks that refuse a plan."""

from __future__ import annotations

import pytest

from autojudge.bench.vllm_plan import check_plan, speculative_settings
from autojudge.errors import InputError
from autojudge.params import BenchParams


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
