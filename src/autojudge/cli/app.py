"""The ``autojudge`` command line: the app, assembled from the command modules, and ``main``.

Top-level commands first, then the groups, in the order ``autojudge --help`` lists them.
"""

from __future__ import annotations

import typer

from autojudge.cli import bench, ceiling, evaluate, plugin, presets, registry, toy
from autojudge.cli.eagle import eagle_app
from autojudge.cli.finetune import finetune_app
from autojudge.cli.params import params_app
from autojudge.errors import AutoJudgeError

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Task-specific judge decoding for vLLM.")
app.command("eval")(evaluate.evaluate_command)
app.command()(registry.promote)
app.command()(presets.preset)
app.command()(evaluate.interval)
app.command()(ceiling.ceiling)
app.add_typer(toy.toy_app, name="toy")
app.add_typer(bench.bench_app, name="bench")
app.add_typer(plugin.vllm_app, name="vllm")
app.add_typer(finetune_app, name="finetune")
app.add_typer(eagle_app, name="eagle")
app.add_typer(params_app, name="params")


def main() -> None:
    """Entry point: user errors print one clear line and exit with status 2."""
    try:
        app()
    except AutoJudgeError as error:
        typer.echo(f"error: {error}", err=True)
        raise SystemExit(2) from None
