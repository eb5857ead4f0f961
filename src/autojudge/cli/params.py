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
    prints '<file>: ok', or the one-line error and exits with status 2."""
    from autojudge.params import load_params

    load_params(file)
    typer.echo(f"{file}: ok")
