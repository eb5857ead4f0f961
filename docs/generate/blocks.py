"""Generated blocks: the markers on a page, the registry of block writers, and rewriting or checking a page.

A block is ``<!-- generated: NAME ARGS -->``, a blank line, its text, a blank line, then ``<!-- end: NAME
-->``, each marker on a line of its own; the writer registered as NAME gets the page (relative to the repository) and ARGS (split on
spaces; a writer may join them again) and returns the block's text.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from pathlib import Path

from .sources import ROOT, SourceError

Writer = Callable[..., str]
WRITERS: dict[str, Writer] = {}
BLOCK = re.compile(
    r"^<!-- generated: (?P<name>[\w-]+)(?P<args>[^\n]*?) -->\n(?P<body>.*?)^<!-- end: (?P=name) -->$",
    re.MULTILINE | re.DOTALL,
)
OPENING = re.compile(r"^<!-- generated: ([\w-]+)", re.MULTILINE)


def writer(name: str) -> Callable[[Writer], Writer]:
    """Registers a function as the writer of blocks called ``name``."""

    def register(function: Writer) -> Writer:
        WRITERS[name] = function
        return function

    return register


def pages() -> list[Path]:
    """The pages that may hold blocks or citations, relative to the repository."""
    found = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "results").rglob("README.md")),
    ]
    return [page.relative_to(ROOT) for page in found if page.is_file()]


def _written(page: Path, match: re.Match) -> str:
    name, args = match["name"], match["args"].split()
    if name not in WRITERS:
        raise SourceError(f"no writer for blocks called {name!r}")
    return (
        "\n" + WRITERS[name](page, *args).strip("\n") + "\n\n"
    )  # blank lines: the text is a block of its own


def render(page: Path, text: str) -> tuple[str, list[str]]:
    """The page's text with every block written anew, and a line per block that could not be written."""
    problems: list[str] = []
    if len(OPENING.findall(text)) != len(BLOCK.findall(text)):
        problems.append(f"{page}: a `<!-- generated: NAME -->` marker without its `<!-- end: NAME -->`")

    def rewrite(match: re.Match) -> str:
        try:
            body = _written(page, match)
        except (SourceError, KeyError, IndexError, ValueError, OSError) as error:
            problems.append(f"{page}: block {match['name']}{match['args']}: {error}")
            body = match["body"]
        return f"<!-- generated: {match['name']}{match['args']} -->\n{body}<!-- end: {match['name']} -->"

    return BLOCK.sub(rewrite, text), problems


def stale(page: Path, written: str) -> str:
    """A short unified diff of the page as committed against the page as written (empty when equal)."""
    before = (ROOT / page).read_text().splitlines(keepends=True)
    diff = difflib.unified_diff(before, written.splitlines(keepends=True), str(page), "as written", n=0)
    return "".join(list(diff)[:40])
