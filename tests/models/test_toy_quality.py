"""The committed toy pair meets its quality bounds, and the committed measurement is of these weights."""

import json

import pytest

from autojudge.models.toy_quality import BOUNDS, weights_digest


def test_committed_measurement_is_current_and_within_bounds(repo, params):
    quality = json.loads((repo / "models" / "toy" / "quality.json").read_text())
    assert quality["weights_sha256"] == {
        "target": weights_digest(repo / params.pair.target),
        "draft": weights_digest(repo / params.pair.draft),
    }
    assert quality["examples"] == params.toy.splits["test"]
    for name, (low, high) in BOUNDS.items():
        assert low <= quality[name] <= high, name
    assert quality["within_bounds"] and not quality["failures"]


@pytest.mark.slow
def test_target_accuracy_reproduces_the_committed_figure(repo, toy_target_greedy):
    """The session's own greedy decode of the test split gives the committed target accuracy."""
    quality = json.loads((repo / "models" / "toy" / "quality.json").read_text())
    assert toy_target_greedy.accuracy == quality["target_accuracy"]
