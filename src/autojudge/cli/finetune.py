"""``autojudge finetune``: train a real target's LoRA adapter and measure the merged target."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from autojudge.cli.options import params_entry
from autojudge.io import write_json

finetune_app = typer.Typer(
    no_args_is_help=True, help="Fine-tuned targets: train the LoRA adapter, measure the merged target."
)


@finetune_app.command("train")
def train(
    name: Annotated[str, typer.Option(help="The entry of params finetune.")],
    steps: Annotated[
        int | None, typer.Option(help="Train to this many steps (default: the entry's).")
    ] = None,
    params: Annotated[Path, typer.Option(help="Parameters file.")] = Path("params.yaml"),
) -> None:
    """Train the entry's LoRA adapter (resumes its checkpoint; hours on 2 cores, minutes on a GPU); then
    `dvc repro finetune@<name>` merges it."""
    from autojudge.models.finetuned_target import train_target_adapter

    settings, entry = params_entry(params, "finetune", name)
    if steps is not None:
        entry = entry.model_copy(update={"steps": steps})
    summary = train_target_adapter(entry, settings.pair.chat_template)
    typer.echo(f"adapter {entry.adapter}: {summary['steps']} steps, curve {summary['curve'][-1]}")


@finetune_app.command("measure")
def measure(
    name: Annotated[str, typer.Option(help="The entry of params finetune.")],
    split: Annotated[list[str], typer.Option(help="Splits to score (repeatable).")] = ["test", "unseen"],  # noqa: B006
    limit: Annotated[int, typer.Option(help="The first N problems of each split.")] = 200,
    out: Annotated[
        Path | None, typer.Option(help="Results file (default: results/finetune/<name>.json).")
    ] = None,
    params: Annotated[Path, typer.Option(help="Parameters file.")] = Path("params.yaml"),
) -> None:
    """Greedy accuracy of the merged target on test splits, against the bars of a competent target."""
    import datetime

    from autojudge.evaluation.stats import mean_of_first, paired_bootstrap
    from autojudge.models.finetuned_target import measure_target

    settings, entry = params_entry(params, "finetune", name)
    figures = measure_target(entry, settings.pair.chat_template, split, limit)
    figures["accuracy_ci95"] = {}
    for split_name, rows in figures["per_problem"].items():
        solved = [float(row["solved"]) for row in rows]
        _, low, high = paired_bootstrap(solved, solved, mean_of_first, seed=0)
        figures["accuracy_ci95"][split_name] = [round(low, 4), round(high, 4)]
    command = f"autojudge finetune measure --name {name} --limit {limit} " + " ".join(
        f"--split {s}" for s in split
    )
    write_json(
        out or Path("results/finetune") / f"{name}.json",
        {**figures, "command": command, "date": datetime.date.today().isoformat(), "target": str(entry.out)},
    )
    typer.echo(f"{entry.out}: accuracy {figures['accuracy']} on {figures['problems']} problems")
