"""The benchmark's section (``bench``) and the checks of a benchmark plan."""

import pytest

from autojudge.params import BenchParams, bench_plan_problems


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "bench: {batch_sizes: [8, 32]}\n",
            r"invalid parameters: bench\.batch_sizes must be distinct positive sizes including 1",
        ),
        (
            "bench: {windows: [4, 8], overhead_window: 16}\n",
            r"bench\.overhead_window 16 must be one of bench\.windows",
        ),
        ("bench: {batch_size: 8}\n", r"bench\.batch_size: Extra inputs are not permitted"),
    ],
)
def test_bad_params_name_file_and_key(rejected, text, message):
    rejected(text, message)


def test_a_plan_copied_with_updates_is_checked_too():
    assert bench_plan_problems(BenchParams()) == []
    plan = BenchParams().model_copy(update={"windows": [3], "repeats": 0, "bootstrap_samples": 5})
    assert bench_plan_problems(plan) == [
        "bench.overhead_window 8 must be one of bench.windows [3]",
        "bench.repeats must be >= 1, got 0",
        "bench.bootstrap_samples must be >= 100, got 5",
    ]
