"""DVC stage distill: a draft for a real target, its first layers trained on the target's greedy responses."""

from autojudge.models.distilled_draft import build_draft
from autojudge.orchestration.stage import run_entry_stage


def distill(params, spec, name) -> dict:
    return build_draft(spec, params.pair.chat_template, params.mining.vllm, name)


if __name__ == "__main__":
    run_entry_stage("distill", "distill", distill, __doc__)
