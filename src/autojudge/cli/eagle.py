"""``autojudge eagle``: train a real target's EAGLE head into its committed directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from autojudge.cli.options import params_entry

eagle_app = typer.Typer(no_args_is_help=True, help="EAGLE heads for real targets: train the committed head.")


@eagle_app.command("train")
def train(
    name: Annotated[str, typer.Option(help="The entry of params eagle.")],
    steps: Annotated[
        int | None, typer.Option(help="Train to at most this many steps (default: the entry's).")
    ] = None,
    params: Annotated[Path, typer.Option(help="Parameters file.")] = Path("params.yaml"),
) -> None:
    """Train the entry's EAGLE head into its `head` directory (resumes its training state; about an hour
    on 2 cores), then `dvc repro eagle@<name>` installs it for the pipeline."""
    from autojudge.models.eagle_stage import train_eagle

    settings, entry = params_entry(params, "eagle", name)
    if steps is not None:
        entry = entry.model_copy(update={"steps": steps})
    record = train_eagle(entry, settings.pair.chat_template, settings.mining.vllm, name)
    typer.echo(
        f"EAGLE head {entry.head}: held-out agreement {record['held_out_agreement']} at step "
        f"{record['best_step']} of {record['steps']} (stopped: {record['stopped']})"
    )
