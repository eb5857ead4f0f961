import pytest

from autojudge.errors import InputError
from autojudge.params import load_params


def test_project_params_are_valid(params):
    assert params.task.name == "arith"
    assert params.toy is not None and params.toy.splits["test"] > 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("decoding: {window: 0}\n", r"decoding\.window: Input should be greater than 0"),
        ("pair: {dtype: float8}\n", r"pair\.dtype"),
        ("decoding: {windw: 4}\n", r"decoding\.windw: Extra inputs are not permitted"),
        ("task: [1, 2\n", "not valid YAML"),
        ("- 1\n", "expected a mapping"),
        (
            "bench: {batch_sizes: [8, 32]}\n",
            r"bench: .*bench\.batch_sizes must be distinct positive sizes including 1",
        ),
        (
            "bench: {windows: [4, 8], overhead_window: 16}\n",
            r"bench\.overhead_window 16 must be one of bench\.windows",
        ),
        ("bench: {batch_size: 8}\n", r"bench\.batch_size: Extra inputs are not permitted"),
        (
            "mining: {split: test}\n",
            r"train\.protocol: held_out evaluates on split 'test', which is also mined",
        ),
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
        ("crossdomain: {domains: [arith]}\n", r"'arith' is not task:split"),
        (
            "tasks: {arith: {}, pyfunc: {}}\nregistry: {model_name: mine}\n",
            r"registry\.model_name names one model",
        ),
    ],
)
def test_bad_params_name_file_and_key(tmp_path, text, message):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as error:
        load_params(path)
    assert "params.yaml" in str(error.value)


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
