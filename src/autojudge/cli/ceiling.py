"""``autojudge ceiling``: a quick look before the long run. Algorithm 1 on a few problems of the params' pair
and task, then the MAT a perfect judge would reach over exact SD's (``evaluation.ceiling``)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Annotated

import typer

from autojudge.cli.options import ParamsOption

NOTE = (
    "ceiling: a judge that accepts exactly Algorithm 1's unimportant mismatches (zero accuracy loss); "
    "95% paired-bootstrap intervals over problems"
)


def ceiling(
    problems: Annotated[
        int, typer.Option(help="Problems to mine (the first N of mining.split after mining.skip).")
    ] = 40,
    window: Annotated[
        list[int] | None, typer.Option(help="Draft windows W (repeatable; default 2, 4, 8, 16, 32).")
    ] = None,
    task_name: Annotated[
        str | None, typer.Option("--task", help="A pipeline task of params tasks (default: params task).")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Keep the mined problems in this shard directory, as stage mine writes one (a rerun with "
            "the same settings resumes, other settings start it over); default: none."
        ),
    ] = None,
    samples: Annotated[int, typer.Option(help="Bootstrap samples of the 95% intervals.")] = 2000,
    params: ParamsOption = Path("params.yaml"),
) -> None:
    """Mine N problems as stage mine does and print the important share of mismatches and the ceiling of
    judge decoding (its MAT over exact SD's) at each window: whether a judge can pay on this pair."""
    from autojudge.errors import InputError
    from autojudge.evaluation.ceiling import WINDOWS, ceiling_summary, check_windows
    from autojudge.params import load_params

    settings = load_params(params, task_name)  # bad params stop here, before the model stack imports
    if problems < 1:
        raise InputError(f"--problems {problems}: need at least 1")
    if samples < 1:
        raise InputError(f"--samples {samples}: need at least 1")
    window = window or list(WINDOWS)
    check_windows(window, settings.mining.max_response_tokens)
    started = time.perf_counter()
    mined = _mine(settings, problems, out)
    summary = ceiling_summary(mined, window, samples)
    seconds = time.perf_counter() - started
    unanswered = summary["problems_without_answer"]
    typer.echo(
        f"{settings.pair.name} on {settings.task.name} ({settings.mining.split}): {summary['problems']} "
        f"problems mined in {seconds:.1f} s"
        + (f", {unanswered} without an answer left out" if unanswered else "")
    )
    fraction = summary["important_fraction"]
    share = f" = {_interval(fraction, '%', 100)}" if fraction else ""
    typer.echo(
        f"important mismatches: {summary['important']} of {summary['mismatches']}{share} "
        f"({summary['mismatches'] / summary['problems']:.1f} per problem)"
    )
    typer.echo(f"{'W':>3}  {'exact SD MAT':<22}{'ceiling MAT':<22}ceiling / exact SD")
    for size, figures in summary["windows"].items():
        exact, top = _interval(figures["exact_mat"]), _interval(figures["ceiling_mat"])
        typer.echo(f"{size:>3}  {exact:<22}{top:<22}{_interval(figures['ratio'], 'x')}")
    typer.echo(NOTE)


def _mine(settings, problems: int, out: Path | None) -> list:
    """The first ``problems`` of ``settings``' mining split mined (one shard), kept in ``out`` if given."""
    from autojudge.mining.run import mine_first

    if out is not None:
        return mine_first(settings, problems, out)
    with tempfile.TemporaryDirectory() as directory:
        return mine_first(settings, problems, Path(directory))


def _interval(figures: dict[str, float], unit: str = "", scale: float = 1) -> str:
    """``value[unit] [low, high]``, two decimals (a percentage: one)."""
    digits = 1 if unit == "%" else 2
    value, low, high = (scale * figures[k] for k in ("value", "low", "high"))
    return f"{value:.{digits}f}{unit} [{low:.{digits}f}, {high:.{digits}f}]"
