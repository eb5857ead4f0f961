"""DVC stage prepare: the task's data splits."""

from autojudge.orchestration.stage import run_stage, stage_arguments
from autojudge.tasks.prepare import prepare_splits


def prepare(params, args) -> None:
    for split, count in prepare_splits(params).items():
        print(f"{split}: {count} problems")


if __name__ == "__main__":
    run_stage("prepare", prepare, stage_arguments(__doc__))
