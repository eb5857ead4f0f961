"""The committed toy pairs meet their quality bounds on every source, and each committed measurement is of
the committed weights."""

import json

import pytest

from autojudge.models.pair import weights_digest
from autojudge.orchestration.presets import merged_params
from autojudge.world.corpus import held_out_problems, mixture_sources
from autojudge.world.quality import BOUNDS


@pytest.mark.parametrize("preset", ["toy", "toy-arith"])
def test_committed_measurement_is_current_and_within_bounds(repo, preset):
    settings = merged_params(repo, preset)[1]
    quality = json.loads((repo / settings.pair.target).parent.joinpath("quality.json").read_text())
    assert quality["weights_sha256"] == {
        "target": weights_digest(repo / settings.pair.target),
        "draft": weights_digest(repo / settings.pair.draft),
    }
    assert set(quality["sources"]) == set(mixture_sources(settings.toy))
    for source, figures in quality["sources"].items():
        assert figures["examples"] == len(held_out_problems(settings.toy, source, "test").examples)
        for name, (low, high) in BOUNDS.items():
            assert low <= figures[name] <= high, (source, name)
    assert quality["within_bounds"] and not quality["failures"]


def test_mixed_pair_measures_every_domain(repo):
    """The two-domain pair is measured on arith, the arith variant and the code task, 200 problems each."""
    quality = json.loads((repo / "models" / "toy_mixed" / "quality.json").read_text())
    assert {s: f["examples"] for s, f in quality["sources"].items()} == {
        "arith": 200,
        "arith_variant": 200,
        "pyfunc": 200,
    }


@pytest.mark.slow
def test_target_accuracy_reproduces_the_committed_figure(repo, params, toy_target_greedy):
    """The session's own greedy decode of the test split gives the committed target accuracy."""
    quality = json.loads((repo / params.pair.target).parent.joinpath("quality.json").read_text())
    assert toy_target_greedy.accuracy == quality["sources"]["arith"]["target_accuracy"]
