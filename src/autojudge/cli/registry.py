"""``autojudge promote``: move the registry's 'production' alias to a head that passes the gates, or roll
it back."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from autojudge.cli.options import ParamsOption


def promote(
    version: Annotated[
        str | None, typer.Option(help="Version to promote (default: the 'candidate').")
    ] = None,
    rollback: Annotated[
        bool, typer.Option("--rollback", help="Restore the previous production version.")
    ] = False,
    task: Annotated[
        str | None, typer.Option(help="The pipeline task whose model to promote (default: params task).")
    ] = None,
    params: ParamsOption = Path("params.yaml"),
) -> None:
    """Move alias 'production' to a head whose card passes the promotion gates (or roll it back)."""
    from autojudge.params import load_params
    from autojudge.registry import promotion as versions
    from autojudge.tracking.store import model_name

    settings = load_params(params, task)
    name = model_name(settings.task.name, settings.pair.name, settings.registry.model_name)
    if rollback:
        typer.echo(f"{name}: production -> version {versions.rollback(name)} (rolled back)")
        return
    gates = settings.promote
    chosen, result = versions.promote(
        name, version, gates.max_accuracy_drop, gates.min_mat_gain, gates.temperature
    )
    if not result.passed:
        typer.echo(f"{name} version {chosen} not promoted:", err=True)
        for reason in result.reasons:
            typer.echo(f"  - {reason}", err=True)
        raise typer.Exit(1)
    typer.echo(f"{name}: production -> version {chosen}")
