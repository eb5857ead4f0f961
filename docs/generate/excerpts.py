"""Blocks copied from a committed output as it is: a table or a section of a markdown file a stage or script
wrote (``table``, ``section``), and a comparison's serving command (``serve``)."""

from __future__ import annotations

import re
from pathlib import Path

from .blocks import writer
from .sources import SourceError, load

HEADING = re.compile(r"^(#+)\s+(.*)$")


def tables(text: str) -> list[str]:
    """The markdown tables of a text: runs of lines that start with ``|``."""
    found, current = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            found.append("\n".join(current))
            current = []
    return found


@writer("table")
def table(page: Path, source: str, number: str = "1") -> str:
    """The ``number``-th table (from 1) of a committed markdown file."""
    found = tables(load(source))
    if not 1 <= int(number) <= len(found):
        raise SourceError(f"{source} has {len(found)} table(s), not a table {number}")
    return found[int(number) - 1]


@writer("section")
def section(page: Path, source: str, *words: str) -> str:
    """The text under the first heading of a committed markdown file that contains ``words``, up to the next
    heading of its level or above, the heading itself as a bold line."""
    lines, wanted = load(source).splitlines(), " ".join(words)
    for start, line in enumerate(lines):
        match = HEADING.match(line)
        if match and wanted in match[2]:
            level = len(match[1])
            end = next(
                (
                    i
                    for i in range(start + 1, len(lines))
                    if (m := HEADING.match(lines[i])) and len(m[1]) <= level
                ),
                len(lines),
            )
            return f"**{match[2]}**\n\n" + "\n".join(lines[start + 1 : end]).strip("\n")
    raise SourceError(f"{source} has no heading containing {wanted!r}")


@writer("serve")
def serve(page: Path, source: str, budget: str, device: str) -> str:
    """The comparison's command serving its recommendation within ``budget`` points, on ``gpu`` (``vllm
    serve``) or ``cpu`` (the CPU build's server), as a bash block."""
    serving = load(source)["serving"][budget]
    command = serving["vllm_serve" if device == "gpu" else "vllm_serve_cpu"]
    return f"```bash\n{command}\n```"
