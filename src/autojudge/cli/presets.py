"""``autojudge preset``: merge a pair preset into params.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def preset(
    name: Annotated[str, typer.Argument(help="Preset in presets/ (e.g. gsm8k-llama), or 'toy'.")],
    root: Annotated[Path, typer.Option(help="Project directory holding params.yaml and presets/.")] = Path(),
) -> None:
    """Merge a pair preset into params.yaml (validated first), ready for `dvc repro`."""
    from autojudge.orchestration.presets import apply_preset, merged_params

    apply_preset(root, name)
    _, settings = merged_params(root, "toy")
    typer.echo(
        f"params.yaml: task {settings.task.name}, pair {settings.pair.name} "
        f"({settings.pair.draft} -> {settings.pair.target}, {settings.pair.dtype} on {settings.pair.device})"
    )
