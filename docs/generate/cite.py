"""Figures cited from a file: a link whose text is the figure, whose target is the committed file and whose
title is the key, ``[56.3%](metrics/arith/mining.json "important_fraction")``.

The link's numbers must be what the key holds, as shown (rounded to the digits written; a share may be
written as a percentage): one number, or an interval entry's point, low and high in that order (or its
point alone), or a list's numbers. Keys: see ``sources.lookup``. JSON, YAML and CSV files can be cited.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from .sources import POINTS, ROOT, SourceError, bounds, load, lookup

CITATION = re.compile(
    r"\[(?P<text>(?:[^\[\]]|\[[^\]]*\])+)\]\((?P<target>[^)\s]+\.(?:json|ya?ml|csv))\s+\"(?P<key>[^\"]+)\"\)"
)
CODE = re.compile(r"^(```|~~~).*?^\1[ \t]*$|(`+)[^`].*?\2", re.MULTILINE | re.DOTALL)
NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
SCALES = (1.0, 100.0)  # a share may be written as a percentage


def _numbers(value: Any) -> list[float] | None:
    """The numbers a cited value shows, in order; None for a value that is not a figure."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, str):
        try:
            return [float(value)]
        except ValueError:
            return None
    if isinstance(value, dict) and {"low", "high"} <= value.keys() and (POINTS & value.keys()):
        return [float(v) for v in bounds(value)]
    if isinstance(value, list) and value and all(isinstance(v, int | float) for v in value):
        return [float(v) for v in value]
    return None


def _shows(written: str, value: float, scale: float) -> bool:
    digits = len(written.partition(".")[2])
    shown = float(written.replace(",", ""))
    return abs(shown - scale * value) <= 0.5 * 10**-digits + 1e-9 * abs(shown)


def mismatch(text: str, value: Any) -> str | None:
    """Why the link text does not show the value; None when it does."""
    wanted = _numbers(value)
    if wanted is None:
        plain = text.replace("*", "").replace("`", "")
        return None if str(value) in plain else f"the file holds {value!r}"
    written = NUMBER.findall(text.replace("*", ""))
    if not written:
        return f"shows no number, the file holds {wanted}"
    pairs = list(zip(written, wanted, strict=False))  # a text may show an interval's point alone
    if any(all(_shows(w, v, scale) for w, v in pairs) for scale in SCALES):
        return None
    return f"the file holds {', '.join(f'{v:g}' for v in wanted)}"


def check(page: Path) -> list[str]:
    """Every citation on the page that its file does not bear out, one line each."""
    problems = []
    text = CODE.sub(
        lambda code: re.sub(r"[^\n]", " ", code[0]), (ROOT / page).read_text()
    )  # code is no citation
    for match in CITATION.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        target = Path(os.path.normpath((ROOT / page).parent / match["target"])).relative_to(ROOT)
        try:
            why = mismatch(match["text"], lookup(load(target), match["key"]))
        except (SourceError, ValueError, IndexError, OSError) as error:
            why = str(error)
        if why:
            problems.append(f'{page}:{line}: [{match["text"]}]({match["target"]} "{match["key"]}"): {why}')
    return problems
