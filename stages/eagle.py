"""DVC stage eagle: an EAGLE head for a real target, trained on its greedy responses (resumable)."""

from autojudge.models.eagle_stage import build_eagle
from autojudge.orchestration.stage import run_entry_stage


def eagle(params, spec, name) -> dict:
    return build_eagle(spec, params.pair.chat_template, params.mining.vllm, name)


if __name__ == "__main__":
    run_entry_stage("eagle", "eagle", eagle, __doc__)
