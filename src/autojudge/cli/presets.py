"""``autojudge preset``: run the pipeline with a pair preset merged over the user's params.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def preset(
    name: Annotated[str, typer.Argument(help="Preset in presets/ (e.g. gsm8k-llama), or 'toy' (none).")],
    root: Annotated[Path, typer.Option(help="Project directory holding params.yaml and presets/.")] = Path(),
    force: Annotated[
        bool, typer.Option(help="Replace a preset's params.yaml even if it was edited by hand.")
    ] = False,
) -> None:
    """Make params.yaml your own file with a pair preset merged in (validated first), ready for `dvc repro`;
    your own file is kept in .preset/params.yaml, and `autojudge preset toy` puts it back byte for byte."""
    from autojudge.orchestration.presets import active_preset, apply_preset

    settings = apply_preset(root, name, force=force)
    active = active_preset(root)
    source = "your own" if active is None else f"preset {active} over your own (.preset/params.yaml)"
    typer.echo(
        f"params.yaml: {source}: task {settings.task.name}, pair {settings.pair.name} "
        f"({settings.pair.draft} -> {settings.pair.target}, {settings.pair.dtype} on {settings.pair.device})"
    )
