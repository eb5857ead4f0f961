"""Options shared by the command groups."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from autojudge.errors import AutoJudgeError

ParamsOption = Annotated[Path, typer.Option("--params", help="Parameters file.")]


def params_entry(params: Path, section: str, name: str):
    """The loaded params and entry ``name`` of their named-entries section ``section`` (finetune, eagle)."""
    from autojudge.params import load_params

    settings = load_params(params)
    entries = getattr(settings, section)
    if name not in entries:
        raise AutoJudgeError(f"{params}: params {section} has no entry {name!r} (has {sorted(entries)})")
    return settings, entries[name]
