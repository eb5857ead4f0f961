"""DVC stage finetune: a real target, its base checkpoint with the committed LoRA adapter merged in."""

from autojudge.models.finetuned_target import merged_target
from autojudge.orchestration.stage import run_entry_stage


def finetune(params, spec, name) -> dict:
    return merged_target(spec, name)


if __name__ == "__main__":
    run_entry_stage("finetune", "finetune", finetune, __doc__)
