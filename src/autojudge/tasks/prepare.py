"""The prepare step: make the task's splits available under its data directory."""

from __future__ import annotations

from autojudge.errors import InputError
from autojudge.params import Params
from autojudge.tasks import get_task
from autojudge.tasks.arith import write_arith_splits


def prepare_splits(params: Params, required: tuple[str, ...] = ("train", "test")) -> dict[str, int]:
    """Generate the arith splits from params, or check that another task's split files are in place.

    Returns the number of examples per split; a missing, empty or malformed split is an error.
    """
    task = get_task(params.task.name, params.task.data_dir)
    if task.name == "arith":
        if params.toy is None:
            raise InputError("the arith task needs a 'toy' section with its split sizes in params")
        write_arith_splits(params.task.data_dir, params.toy.splits, params.toy.seed)
        splits = tuple(params.toy.splits)
    else:
        splits = tuple(dict.fromkeys([*required, params.mining.split, params.evaluate.split]))
    return {split: len(task.load_split(split)) for split in splits}
