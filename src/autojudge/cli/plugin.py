"""``autojudge vllm``: the vLLM judge plugin (which hooks the installed vLLM offers)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from autojudge.cli.options import ParamsOption

vllm_app = typer.Typer(no_args_is_help=True, help="The vLLM judge plugin.")


@vllm_app.command("check")
def vllm_check(
    params: ParamsOption = Path("params.yaml"),
    window: Annotated[
        int | None, typer.Option(help="Draft tokens per step (default decoding.window).")
    ] = None,
) -> None:
    """Print the installed vLLM, the model runner the pair's engine would use, and every hook point."""
    from autojudge.params import load_params
    from autojudge.vllm_plugin.compat import engine_report

    settings = load_params(params)
    report = engine_report(
        str(settings.pair.target),
        str(settings.pair.draft),
        window or settings.decoding.window,
        settings.mining.vllm.max_model_len,
        settings.mining.vllm.engine_kwargs,
        settings.pair.proposer,
    )
    typer.echo(
        f"vLLM: {report['vllm']} (plugin tested on {report['supported']}), platform {report['platform']}"
    )
    typer.echo(f"model runner for {settings.pair.target} + {settings.pair.draft}: {report['runner']}")
    for name, problem in report["hooks"].items():
        typer.echo(f"  ok       {name}" if problem is None else f"  MISSING  {name}: {problem}")
    if report["problems"]:
        typer.echo("an engine enabling the plugin would NOT start: " + "; ".join(report["problems"]))
        raise typer.Exit(1)
    typer.echo("an engine enabling the plugin would start")
