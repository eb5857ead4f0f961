"""The important share of each proposer's mined mismatches (``importance <file>``), from the
``importance.json`` that results/proposers/importance.py writes: all of them, those involving a digit, and
those in words only."""

from __future__ import annotations

from pathlib import Path

from .blocks import writer
from .sources import load, percent


def _share(group: dict) -> str:
    low, high = group["ci95"]
    return f"{percent(group['fraction'])} [{100 * low:.1f}, {100 * high:.1f}] of {group['mismatches']:,}"


@writer("importance")
def importance(page: Path, source: str) -> str:
    """One row per proposer: problems, mismatches per problem, and the three important shares."""
    report = load(source)
    lines = [
        "| proposer | problems | mismatches per problem | important [95% CI] | involving a digit | words only |",
        "|---|---:|---:|---|---|---|",
    ]
    for name, figures in report["proposers"].items():
        lines.append(
            f"| {name} | {figures['problems']} | {figures['mismatches_per_problem']:.1f} | "
            f"**{_share(figures['all'])}** | {_share(figures['involving_a_digit'])} | "
            f"{_share(figures['words_only'])} |"
        )
    return "\n".join(lines)
