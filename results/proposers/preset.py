"""What the proposers scripts share: the params of preset smollm2-eagle and its EAGLE head's entry."""

from __future__ import annotations

import sys
from pathlib import Path

from autojudge.params import EagleParams, Params, load_params


def eagle_preset(path: Path) -> tuple[Params, EagleParams]:
    """The params at ``path`` and their (one) EAGLE head; exits with one line when there is none."""
    params = load_params(path)
    eagle = next(iter(params.eagle.values()), None)
    if eagle is None:
        sys.exit(f"{path}: no eagle head (apply preset smollm2-eagle first)")
    return params, eagle
