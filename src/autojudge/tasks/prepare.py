"""The prepare step: make the task's splits available under its data directory."""

from __future__ import annotations

from autojudge.errors import InputError
from autojudge.params import Params
from autojudge.tasks import get_task
from autojudge.tasks.arith import write_arith_splits
from autojudge.tasks.humaneval import write_humaneval_split
from autojudge.tasks.pyfunc import write_pyfunc_splits


def prepare_splits(params: Params, required: tuple[str, ...] = ("train", "test")) -> dict[str, int]:
    """Generate the toy splits (arith, pyfunc) from params, write HumanEval's packaged problems, or
    check that another task's split files are in place.

    Returns the number of examples per split; a missing, empty or malformed split is an error.
    """
    task = get_task(params.task.name, params.task.data_dir)
    if task.name in ("arith", "pyfunc"):
        if params.toy is None:
            raise InputError(f"the {task.name} task needs a 'toy' section with its split sizes in params")
        sizes = params.toy.splits if task.name == "arith" else params.toy.code_splits
        writer = write_arith_splits if task.name == "arith" else write_pyfunc_splits
        writer(params.task.data_dir, sizes, params.toy.seed)
        splits = tuple(sizes)
    elif task.name == "humaneval":
        write_humaneval_split(params.task.data_dir)
        splits = ("test",)
    else:
        splits = tuple(dict.fromkeys([*required, params.mining.split, params.evaluate.split]))
    return {split: len(task.load_split(split)) for split in splits}
