"""The table params check split names against (``params.task_splits``) agrees with ``autojudge.tasks``: the
same tasks, and for each the splits its prepare step generates, writes or requires."""

import pytest

from autojudge.params import KNOWN_TASKS, TOY_SPLIT_SIZES, task_splits
from autojudge.tasks import TASKS
from autojudge.tasks.base import Task
from autojudge.tasks.prepare import prepare_splits

WRITTEN = (*TOY_SPLIT_SIZES, "humaneval")  # prepare writes these tasks' files; the others' it reads


def test_the_known_tasks_are_the_tasks():
    assert sorted(KNOWN_TASKS) == sorted(TASKS)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_prepare_provides_exactly_the_splits_params_know(params, tmp_path, monkeypatch, name):
    read: list[str] = []
    monkeypatch.setattr(Task, "load_split", lambda self, split, limit=None: read.append(split) or [None])
    toy = params.toy.model_copy(
        update={"splits": {"train": 4, "test": 3, "unseen": 2}, "code_splits": {"train": 4, "test": 3}}
    )
    data_dir = tmp_path / name
    settings = params.model_copy(
        update={"task": params.task.model_copy(update={"name": name, "data_dir": data_dir}), "toy": toy}
    )
    known = task_splits(name, toy)
    assert tuple(prepare_splits(settings)) == tuple(read) == known
    written = {path.stem for path in data_dir.glob("*.jsonl")}
    assert written == (set(known) if name in WRITTEN else set())
