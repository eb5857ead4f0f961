"""DVC stage eagle: the committed EAGLE head of a real target, checked against its entry and installed."""

from autojudge.models.eagle_stage import install_eagle
from autojudge.orchestration.stage import run_entry_stage


def eagle(params, spec, name) -> dict:
    return install_eagle(spec, name)


if __name__ == "__main__":
    run_entry_stage("eagle", "eagle", eagle, __doc__)
