"""What the proposers scripts share: the params of preset smollm2-eagle and its EAGLE head's entry."""

from __future__ import annotations

import sys
from pathlib import Path

from autojudge.params import EagleParams, Params, load_params


def eagle_preset(path: Path) -> tuple[Params, EagleParams]:
    """The params at ``path``, their pair drafting with the preset's distilled draft (``distill.<name>.out``;
    the preset's own pair drafts with the head), and their (one) EAGLE head; exits with one line when there
    is no head or no draft."""
    params = load_params(path)
    eagle = next(iter(params.eagle.values()), None)
    distill = next(iter(params.distill.values()), None)
    if eagle is None or distill is None:
        sys.exit(f"{path}: no eagle head or distilled draft (apply preset smollm2-eagle first)")
    pair = params.pair.model_copy(update={"proposer": "draft_model", "draft": distill.out})
    return params.model_copy(update={"pair": pair}), eagle
