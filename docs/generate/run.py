"""Writing every block and the figure, or checking them against the committed files."""

from __future__ import annotations

from . import cite, excerpts, figure, importance, pairs, run_files, stages_log, timing
from .blocks import pages, render, stale
from .sources import ROOT

WRITERS = (
    excerpts,
    importance,
    pairs,
    run_files,
    stages_log,
    timing,
)  # imported for the blocks they register


def run(write: bool) -> list[str]:
    """Rewrites (``write``) or checks every page's blocks, its citations and the pairs' figure; returns a
    line per problem (with ``write``, only the blocks that could not be written and the citations)."""
    problems: list[str] = []
    for page in pages():
        text = (ROOT / page).read_text()
        written, failed = render(page, text)
        problems += failed
        if written != text:
            if write:
                (ROOT / page).write_text(written)
            else:
                problems.append(
                    f"{page}: generated blocks differ from the committed files:\n{stale(page, written)}"
                )
        problems += cite.check(page)
    data = figure.table()
    if write:
        figure.write()
    elif not (ROOT / figure.CSV).is_file() or (ROOT / figure.CSV).read_text() != data:
        problems.append(f"{figure.CSV}: not the figure's data from the committed files")
    return problems
