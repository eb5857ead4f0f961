"""``autojudge params check``: the whole check of a parameters file, alone (no stage runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

params_app = typer.Typer(no_args_is_help=True, help="The parameters file: check it whole.")


@params_app.command("check")
def params_check(
    file: Annotated[Path, typer.Option("--file", "--params", help="Parameters file.")] = Path("params.yaml"),
) -> None:
    """Load and check the parameters file as every stage does (each pipeline task's overrides included):
    prints '<file>: ok' (and the preset it is the view of, if any), or the one-line error and exits with
    status 2."""
    from autojudge.orchestration.presets import active_preset
    from autojudge.params import load_params

    load_params(file)
    preset = active_preset(file.parent) if file.name == "params.yaml" else None
    typer.echo(f"{file}: ok" + (f" (preset {preset} over your own .preset/params.yaml)" if preset else ""))
