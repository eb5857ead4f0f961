"""A run's parameters merged over the checkout's own params.yaml: preset, shard count, threshold policy,
task check; each run starts from the checkout's own file, never from an earlier run's."""

from __future__ import annotations

import shutil

import pytest
import yaml

from autojudge.errors import InputError
from autojudge.orchestration.run_params import configure_run

KEEP = {"threshold_policy": None, "target_recall": None, "accuracy_budget": None}


@pytest.fixture
def workdir(repo, tmp_path):
    shutil.copy2(repo / "params.yaml", tmp_path / "params.yaml")
    shutil.copytree(repo / "presets", tmp_path / "presets")
    return tmp_path


def test_shards_and_threshold_policy_land_in_params(workdir):
    before = yaml.safe_load((workdir / "params.yaml").read_text())
    threshold = {**KEEP, "threshold_policy": "recall", "target_recall": 0.95}
    params = configure_run(workdir, "toy", "arith", 3, threshold)
    assert params.mining.shards == [0, 1, 2]
    assert (params.train.threshold_policy, params.train.target_recall) == ("recall", 0.95)
    written = yaml.safe_load((workdir / "params.yaml").read_text())
    assert written["mining"]["shards"] == [0, 1, 2] and written["train"]["target_recall"] == 0.95
    assert written["train"]["accuracy_budget"] == before["train"]["accuracy_budget"]  # left out: kept


def test_a_run_that_changes_nothing_leaves_params_yaml_untouched(workdir):
    before = (workdir / "params.yaml").read_text()
    current = yaml.safe_load(before)
    configure_run(
        workdir,
        "toy",
        None,
        len(current["mining"]["shards"]),
        {**KEEP, "target_recall": current["train"]["target_recall"]},
    )
    configure_run(workdir, "toy", None, None, KEEP)
    assert (workdir / "params.yaml").read_text() == before  # comments kept: not rewritten


def test_a_preset_is_merged_and_the_run_overrides_it(workdir):
    own = (workdir / "params.yaml").read_bytes()
    params = configure_run(workdir, "gsm8k-llama", "gsm8k", 2, KEEP)
    assert params.task.name == "gsm8k" and params.pair.device == "cuda" and params.toy is None
    assert params.mining.shards == [0, 1]  # the preset's 8 shards, overridden by the run
    params = configure_run(workdir, "smollm2-cpu", None, None, KEEP)  # the next run: nothing of the last
    assert params.mining.shards == [0] and params.pair.name == "smollm2-135m-distilled"
    configure_run(workdir, "toy", None, None, KEEP)
    assert (workdir / "params.yaml").read_bytes() == own


def test_a_task_that_does_not_match_the_preset_stops(workdir):
    with pytest.raises(InputError, match="task 'gsm8k' does not match preset 'toy'"):
        configure_run(workdir, "toy", "gsm8k", None, KEEP)


@pytest.mark.parametrize(
    ("shards", "threshold", "message"),
    [
        (0, {}, "shards: need at least 1"),
        (None, {"target_recall": 1.5}, "train.target_recall"),
        (None, {"threshold_policy": "median"}, "train.threshold_policy"),
    ],
)
def test_bad_run_parameters_stop_naming_them(workdir, shards, threshold, message):
    with pytest.raises(InputError, match=message):
        configure_run(workdir, "toy", None, shards, {**KEEP, **threshold})


def test_an_unknown_preset_stops(workdir):
    with pytest.raises(InputError, match="unknown preset 'nope'"):
        configure_run(workdir, "nope", None, None, KEEP)
