"""What the proposers scripts share: the params of preset smollm2-eagle, its EAGLE head's entry, and the
distilled draft of preset smollm2-arith (the EAGLE preset builds none)."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from autojudge.params import DistillParams, EagleParams, Params, load_params

DRAFT_PRESET = Path("presets/smollm2-arith.yaml")  # its distill entry: the draft the head is compared with


def eagle_preset(path: Path) -> tuple[Params, EagleParams]:
    """The params at ``path`` with the pair of ``DRAFT_PRESET`` (its name, and its distilled draft
    ``distill.<name>.out``; the preset's own pair drafts with the head), and their (one) EAGLE head; exits
    with one line when there is no head, or the draft is not built."""
    params = load_params(path)
    eagle = next(iter(params.eagle.values()), None)
    if eagle is None:
        sys.exit(f"{path}: no eagle head (apply preset smollm2-eagle first)")
    preset = yaml.safe_load(DRAFT_PRESET.read_text())
    distill = DistillParams(**next(iter(preset["distill"].values())))
    if not (distill.out / "config.json").is_file():
        sys.exit(
            f"{distill.out}: no distilled draft (autojudge preset smollm2-arith && dvc repro distill@smollm2-arith)"
        )
    # its name too: mined problems record it
    pair = params.pair.model_copy(
        update={"name": preset["pair"]["name"], "proposer": "draft_model", "draft": distill.out}
    )
    return params.model_copy(update={"pair": pair}), eagle
