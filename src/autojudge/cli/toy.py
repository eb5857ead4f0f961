"""``autojudge toy``: train and measure the toy draft/target pair."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from autojudge.cli.options import ParamsOption
from autojudge.errors import AutoJudgeError
from autojudge.io import write_json

if TYPE_CHECKING:
    from autojudge.params import Params

toy_app = typer.Typer(
    no_args_is_help=True, help="The toy world: train and measure the toy draft/target pair."
)
PresetOption = Annotated[str | None, typer.Option(help="A preset in presets/ merged over the params file.")]


def _toy_settings(params: Path, preset: str | None) -> Params:
    """The params file, with ``preset`` merged in; it must have a 'toy' section."""
    from autojudge.orchestration.presets import merged_params
    from autojudge.params import load_params

    settings = merged_params(params.parent, preset)[1] if preset else load_params(params)
    if settings.toy is None:
        raise AutoJudgeError(f"{params}{' with preset ' + preset if preset else ''}: no 'toy' section")
    return settings


@toy_app.command("train")
def toy_train(
    out: Annotated[Path, typer.Option(help="Directory for the tokenizer and both models.")] = Path(
        "models/toy_mixed"
    ),
    only: Annotated[
        str | None, typer.Option(help="Train only this model (draft: reuses the target's tokenizer in OUT).")
    ] = None,
    params: ParamsOption = Path("params.yaml"),
    preset: PresetOption = None,
    force: Annotated[
        bool, typer.Option(help="Overwrite models already in OUT (the committed pair).")
    ] = False,
) -> None:
    """Train the toy tokenizer, target and draft from the 'toy' params (slow: tens of minutes)."""
    if only not in (None, "target", "draft"):
        raise AutoJudgeError(f"--only must be target or draft, got {only!r}")
    roles = (only,) if only else ("target", "draft")
    existing = [str(out / role) for role in roles if (out / role).exists()]
    if existing and not force:
        raise AutoJudgeError(
            f"{' and '.join(existing)} already exist{'s' if len(existing) == 1 else ''}: pass --force to "
            "overwrite (the pair in models/ is committed), or --out another directory"
        )
    from autojudge.io import read_json
    from autojudge.world.training import train_toy_pair

    settings = _toy_settings(params, preset)
    record_path = out / "training.json"
    record = read_json(record_path) if only and record_path.exists() else {"history": {}}
    histories = train_toy_pair(settings.toy, out, roles)
    command = (
        "autojudge toy train"
        + (f" --preset {preset}" if preset else "")
        + (f" --only {only}" if only else "")
        + (" --force" if force else "")
    )
    record["commands"] = [*record.get("commands", []), command] if only else [command]
    record["toy"] = settings.toy.model_dump(mode="json")
    record["history"] = {**record["history"], **histories}
    write_json(record_path, record)
    typer.echo(f"trained toy pair in {out}")


@toy_app.command("measure")
def toy_measure(
    out: Annotated[
        Path | None,
        typer.Option(help="Where to write the figures (default: quality.json beside the target)."),
    ] = None,
    params: ParamsOption = Path("params.yaml"),
    preset: PresetOption = None,
) -> None:
    """Measure the pair's quality figures (accuracies, agreement) on the test split of every source of the toy
    corpus, and check them against their bounds."""
    from autojudge.models.pair import weights_digest
    from autojudge.models.runtime import pair_from
    from autojudge.world.quality import measure_sources

    settings = _toy_settings(params, preset)
    pair = pair_from(settings)
    sources = measure_sources(pair, settings.toy, settings.decoding.max_new_tokens)
    failures = [
        f"{source}: {failure}" for source, figures in sources.items() for failure in figures["failures"]
    ]
    write_json(
        out or Path(settings.pair.target).parent / "quality.json",
        {
            "command": "autojudge toy measure" + (f" --preset {preset}" if preset else ""),
            "sources": sources,
            "within_bounds": not failures,
            "failures": failures,
            "weights_sha256": {
                "target": weights_digest(settings.pair.target),
                "draft": weights_digest(settings.pair.draft),
            },
        },
    )
    typer.echo(json.dumps(sources, indent=2))
    if failures:
        typer.echo("outside bounds: " + "; ".join(failures), err=True)
        raise typer.Exit(1)
