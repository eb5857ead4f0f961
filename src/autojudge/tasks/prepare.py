"""The prepare step: make the task's splits available under its data directory."""

from __future__ import annotations

from autojudge.errors import InputError
from autojudge.params import TOY_SPLIT_SIZES, Params, task_splits
from autojudge.tasks import get_task
from autojudge.tasks.arith import write_arith_splits
from autojudge.tasks.humaneval import write_humaneval_split
from autojudge.tasks.pyfunc import write_pyfunc_splits

TOY_WRITERS = {"arith": write_arith_splits, "pyfunc": write_pyfunc_splits}


def prepare_splits(params: Params) -> dict[str, int]:
    """Generate the toy splits (arith, pyfunc) from params, write HumanEval's packaged problems, or
    check that another task's split files are in place (the splits params know it has: ``task_splits``).

    Returns the number of examples per split; a missing, empty or malformed split is an error.
    """
    task = get_task(params.task.name, params.task.data_dir)
    if task.name in TOY_SPLIT_SIZES:
        if params.toy is None:
            raise InputError(f"the {task.name} task needs a 'toy' section with its split sizes in params")
        sizes = getattr(params.toy, TOY_SPLIT_SIZES[task.name])
        TOY_WRITERS[task.name](params.task.data_dir, sizes, params.toy.seed)
    elif task.name == "humaneval":
        write_humaneval_split(params.task.data_dir)
    splits = task_splits(task.name, params.toy) or ()
    return {split: len(task.load_split(split)) for split in splits}
