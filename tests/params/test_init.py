"""The root ``Params``: reading the file, the checks across sections, pipeline tasks and their overrides."""

import pytest

from autojudge.errors import InputError
from autojudge.params import load_params, overlay


def test_project_params_are_valid(params):
    assert params.task.name == "arith"
    assert params.toy is not None and params.toy.splits["test"] > 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("task: [1, 2\n", "not valid YAML"),
        ("- 1\n", "expected a mapping"),
        (
            "mining: {split: test}\n",
            r"train\.protocol: held_out evaluates on split 'test', which is also mined",
        ),
        ("train: {protocol: out_of_fold}\n", r"mining\.split 'train' must equal evaluate\.split 'test'"),
        (
            "train: {protocol: out_of_fold, threshold_policy: accuracy}\nmining: {split: test}\n",
            r"out_of_fold chooses thresholds by threshold_policy: recall",
        ),
        ("tasks: {pyfunc: {}}\n", r"task\.name 'arith' must be one of tasks \['pyfunc'\]"),
        (
            "tasks: {arith: {task: {name: gsm8k}}}\n",
            r"tasks\.arith: may override sections of params but task",
        ),
        ("tasks: {arith: {minning: {}}}\n", r"tasks\.arith: may override .*minning"),
        ("tasks: {arith: {}}\ncrossdomain: {domains: ['pyfunc:test']}\n", r"'pyfunc:test' names no task"),
        (
            "tasks: {arith: {}, pyfunc: {}}\nregistry: {model_name: mine}\n",
            r"registry\.model_name names one model",
        ),
    ],
)
def test_bad_params_name_file_and_key(rejected, text, message):
    rejected(text, message)


def test_missing_params_file(tmp_path):
    with pytest.raises(InputError, match="parameters file not found"):
        load_params(tmp_path / "nope.yaml")


def test_a_task_stage_sees_its_overrides_and_its_data_directory(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(
        "tasks: {arith: {}, pyfunc: {mining: {problems: 50}, train: {seed: 3}}}\nmining: {problems: 9}\n"
    )
    primary, code = load_params(path), load_params(path, task="pyfunc")
    assert (primary.task.name, primary.mining.problems, primary.train.seed) == ("arith", 9, 0)
    assert (code.task.name, str(code.task.data_dir)) == ("pyfunc", "data/pyfunc")
    assert (code.mining.problems, code.train.seed, code.mining.split) == (50, 3, "train")
    assert load_params(path, task="arith").mining.problems == 9
    with pytest.raises(InputError, match="task 'gsm8k' is not a pipeline task"):
        load_params(path, task="gsm8k")


def test_overlay_merges_mappings_and_null_drops_a_key():
    base = {"pair": {"name": "toy", "dtype": "float32"}, "toy": {"seed": 0}, "mining": {"split": "train"}}
    changes = {"pair": {"name": "real", "device": "cuda"}, "toy": None, "mining": "flat"}
    assert overlay(base, changes) == {
        "pair": {"name": "real", "dtype": "float32", "device": "cuda"},
        "mining": "flat",
    }
    assert base["pair"] == {"name": "toy", "dtype": "float32"}  # not modified
