"""The sections of decoding, evaluation, comparison and release: ``decoding``, ``evaluate``, ``compare``,
``crossdomain``, ``registry``, ``promote``."""

import pytest


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("decoding: {window: 0}\n", r"decoding\.window: Input should be greater than 0"),
        ("decoding: {windw: 4}\n", r"decoding\.windw: Extra inputs are not permitted"),
        (
            "compare: {window: 4, fly_window_size: 6}\n",
            r"fly_window_size must be in \[1, 3\]",
        ),
        (
            "compare: {methods: [fsd-js, random]}\n",
            r"compare\.methods: unknown \['random'\]",
        ),
        (
            "compare: {rates: [0.5, 1.5]}\n",
            r"compare\.rates\.1: Input should be less than or equal to 1",
        ),
        ("compare: {rates: []}\n", r"compare\.rates: at least one acceptance rate"),
        ("crossdomain: {domains: [arith]}\n", r"'arith' is not task:split"),
        ("promote: {min_mat_gain: 0}\n", r"promote\.min_mat_gain: Input should be greater than 0"),
    ],
)
def test_bad_params_name_file_and_key(rejected, text, message):
    rejected(text, message)
