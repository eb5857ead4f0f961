"""The prepare step for the toy code task and HumanEval (the arith splits are tested with their generator)."""

from autojudge.params import load_params
from autojudge.tasks import get_task
from autojudge.tasks.prepare import prepare_splits


def _params(tmp_path, task):
    params = load_params("params.yaml")
    return params.model_copy(
        update={
            "task": params.task.model_copy(update={"name": task, "data_dir": tmp_path / task}),
            "toy": params.toy.model_copy(update={"code_splits": {"train": 12, "validation": 4, "test": 5}}),
        }
    )


def test_pyfunc_splits_are_generated_from_toy_code_splits(tmp_path):
    counts = prepare_splits(_params(tmp_path, "pyfunc"))
    assert counts == {"train": 12, "validation": 4, "test": 5}
    task = get_task("pyfunc", tmp_path / "pyfunc")
    test = task.load_split("test")
    assert all(e.tests and e.entry_point for e in test)
    held_out = [e.question for split in ("validation", "test") for e in task.load_split(split)]
    assert len(set(held_out)) == len(held_out)  # distinct prompts, none seen in training
    assert not {e.question for e in task.load_split("train")} & set(held_out)


def test_humaneval_writes_its_packaged_test_split(tmp_path):
    assert prepare_splits(_params(tmp_path, "humaneval")) == {"test": 164}
