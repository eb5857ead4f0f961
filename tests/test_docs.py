"""The documents stay true to the repository: every relative link in README.md, ARCHITECTURE.md, docs/*.md
and results/**/README.md resolves (to a file or folder, and a ``#anchor`` into a markdown file to one of its
headings), every ``autojudge <command>`` they quote (in code spans and code blocks) is a command of
``python -m autojudge --help``, ARCHITECTURE.md lists the packages in the layer order of
tests/test_layers.py, the README fits a screen and a half and every docs page opens with a short summary,
and every generated figure (the blocks docs/generate writes, the figures cited from a file, the three pairs'
plotted data) is what the committed files give now.
"""

from __future__ import annotations

import ast
import functools
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md"))]
RESULTS = sorted((ROOT / "results").rglob("README.md"))  # links checked too; their commands are records
README_LINES = 120  # one screen and a half
PAGE_LINES = 250  # a docs page's own lines (generated blocks grow with the methods and runs they show)

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(\S+)", re.MULTILINE)
COMMAND = re.compile(r"(?<![\w./\-\"'])autojudge((?:[ \t]+[a-z][a-z0-9-]*)+)")


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def prose(text: str) -> str:
    """The text without code blocks and code spans (links there are not links)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def code(text: str) -> list[str]:
    """Every code block and code span of the text."""
    blocks = [m.group(0) for m in FENCE.finditer(text)]
    spans = [m.group(2) for m in CODE_SPAN.finditer(FENCE.sub("", text))]
    return blocks + spans


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@functools.cache
def anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", path.read_text()).splitlines():
        match = re.match(r"#{1,6}\s+(.+?)\s*#*\s*$", line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def links(path: Path) -> list[str]:
    text = prose(path.read_text())
    targets = [m.group(1).strip("<>") for m in INLINE_LINK.finditer(text)]
    return targets + REFERENCE_LINK.findall(text)


def broken(path: Path, target: str) -> str | None:
    """Why ``target``, linked from ``path``, does not resolve; None when it does (or is not relative)."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("//"):
        return None  # http:, https:, mailto:, ...
    file_part, _, anchor = target.partition("#")
    if file_part.startswith("/"):
        resolved = ROOT / file_part.lstrip("/")
    else:
        resolved = path.parent / file_part if file_part else path
    resolved = Path(os.path.normpath(resolved))
    if not resolved.is_relative_to(ROOT):
        return f"{target}: outside the repository"
    if not resolved.exists():
        return f"{target}: no such file or folder"
    if anchor and resolved.suffix == ".md" and anchor.lower() not in anchors(resolved):
        return f"{target}: no heading with anchor #{anchor} in {_name(resolved)}"
    return None


def test_the_documents_exist() -> None:
    assert (ROOT / "README.md").exists() and (ROOT / "ARCHITECTURE.md").exists()
    assert len(DOCS) > 2, "docs/*.md holds no page"


@pytest.mark.parametrize("path", DOCS + RESULTS, ids=_name)
def test_every_relative_link_resolves(path: Path) -> None:
    problems = [why for target in links(path) if (why := broken(path, target))]
    assert not problems, f"{_name(path)}: broken links:\n" + "\n".join(problems)


def test_the_readme_links_every_docs_page() -> None:
    readme = ROOT / "README.md"
    linked = {Path(os.path.normpath(ROOT / t.partition("#")[0])) for t in links(readme)}
    orphans = [_name(page) for page in DOCS[2:] if page not in linked]
    assert not orphans, f"docs pages the README does not link: {orphans}"


@functools.cache
def listed_commands(*group: str) -> frozenset[str] | None:
    """The commands ``python -m autojudge [group] --help`` lists; None when it lists none (a leaf)."""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
    result = subprocess.run(
        [sys.executable, "-m", "autojudge", *group, "--help"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, f"autojudge {' '.join(group)} --help failed:\n{result.stderr[-2000:]}"
    names: set[str] = set()
    inside = False
    for line in result.stdout.splitlines():
        if re.match(r"^\s*[╭┌+-]?[─-]*\s*Commands\b", line):
            inside = True
            continue
        if inside:
            if line.lstrip().startswith(("╰", "└")) or not line.strip():
                break
            match = re.match(r"^\s*[│|]?\s?([a-z][a-z0-9-]*)(?:\s{2,}|\s*[│|]?\s*$)", line)
            if match:
                names.add(match.group(1))
    return frozenset(names) if inside else None


def quoted_commands() -> dict[str, set[str]]:
    """``autojudge <command> [<subcommand>]`` quoted in code of the documents -> where."""
    found: dict[str, set[str]] = {}
    for path in DOCS:
        for snippet in code(path.read_text()):
            for match in COMMAND.finditer(snippet):
                words = match.group(1).split()
                found.setdefault(" ".join(words[:2]), set()).add(_name(path))
    return found


def test_every_quoted_command_exists() -> None:
    quoted = quoted_commands()
    assert "promote" in {key.split()[0] for key in quoted}, "found no `autojudge promote` in the documents"
    top = listed_commands()
    assert top, "autojudge --help lists no commands"
    missing = []
    for key, where in sorted(quoted.items()):
        words = key.split()
        if words[0] not in top:
            missing.append(f"autojudge {words[0]} (in {', '.join(sorted(where))})")
            continue
        if len(words) > 1:
            sub = listed_commands(words[0])
            if sub is not None and words[1] not in sub:
                missing.append(f"autojudge {key} (in {', '.join(sorted(where))})")
    listing = "\n".join(missing)
    assert not missing, f"commands the documents quote but `autojudge --help` does not list:\n{listing}"


def test_architecture_lists_the_layers_in_order() -> None:
    tree = ast.parse((ROOT / "tests" / "test_layers.py").read_text())
    layers = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "LAYERS" for t in node.targets)
    )
    expected = [name for names in layers for name in names]
    table = (ROOT / "ARCHITECTURE.md").read_text()
    rows = re.findall(r"^\|\s*\d+\s*\|\s*`([\w.]+)`\s*\|", table, re.MULTILINE)
    assert rows == expected, f"ARCHITECTURE.md's packages: {rows}; tests/test_layers.py's LAYERS: {expected}"


@functools.cache
def generator(module: str):
    """A module of docs/generate (the package the pages' generated figures come from)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module(f"docs.generate.{module}")


def test_every_generated_figure_is_what_the_committed_files_give() -> None:
    """Every block of README.md, docs/*.md and results/**/README.md, every figure cited from a file and the
    three pairs' plotted data, as `python -m docs.generate` would write them from the files now."""
    problems = generator("run").run(write=False)
    assert not problems, "\n".join(problems) + "\nrun `make docs` (python -m docs.generate) and commit"
    assert (ROOT / "results" / "pairs" / "pairs.png").is_file(), "no results/pairs/pairs.png: run make docs"


def test_the_pages_hold_generated_blocks_and_citations() -> None:
    """The check has something to check: the README's results and serving commands are generated."""
    readme = (ROOT / "README.md").read_text()
    for name in ("pairs-summary", "serve", "timing-latest"):
        assert f"<!-- generated: {name}" in readme, f"README.md has no generated {name} block"
    cited = [
        page
        for page in generator("blocks").pages()
        if generator("cite").CITATION.search((ROOT / page).read_text())
    ]
    assert len(cited) > 5, f"only {cited} cite figures from files"


def test_a_stale_block_is_found_and_rewritten() -> None:
    """A block whose text is not what its writer gives now differs after rendering; a fresh one does not."""
    blocks = generator("blocks")
    text = "intro\n<!-- generated: serve metrics/arith/compare.json 1 gpu -->\nold command\n<!-- end: serve -->\n"
    written, problems = blocks.render(Path("README.md"), text)
    assert not problems and written != text and "vllm serve" in written
    assert blocks.render(Path("README.md"), written) == (written, [])
    _, problems = blocks.render(
        Path("README.md"), "<!-- generated: serve metrics/arith/compare.json 1 gpu -->\n"
    )
    assert problems, "a block without its end marker went unnoticed"
    _, problems = blocks.render(Path("README.md"), "<!-- generated: nothing -->\nx\n<!-- end: nothing -->\n")
    assert problems, "a block of no writer went unnoticed"


@pytest.mark.parametrize(
    ("text", "value", "fine"),
    [
        ("56.3%", 0.5634, True),
        ("**56.3%**", 0.5634, True),
        ("56.4%", 0.5634, False),
        ("0.961", 0.961219, True),
        ("0.96", 0.961219, True),
        ("0.97", 0.961219, False),
        ("2,395", 2395, True),
        ("5.5 [1.5, 10.0]", {"value": 0.055, "low": 0.015, "high": 0.1}, True),
        ("5.5 [1.5, 11.0]", {"value": 0.055, "low": 0.015, "high": 0.1}, False),
        ("1.05x [1.02, 1.09]", {"point": 1.053, "low": 1.018, "high": 1.091, "verdict": "faster"}, True),
        ("-7.8% [-11.7, -3.3]", {"point": -7.78, "low": -11.67, "high": -3.27}, True),
        ("[40.7, 47.6]", [0.4072, 0.4759], True),
        ("no figure", 0.5, False),
    ],
)
def test_a_cited_figure_must_be_what_its_file_holds(text: str, value: object, fine: bool) -> None:
    assert (generator("cite").mismatch(text, value) is None) is fine


def _own_lines(path: Path) -> list[str]:
    """The page's lines outside its generated blocks."""
    return generator("blocks").BLOCK.sub("", path.read_text()).splitlines()


def test_the_readme_fits_a_screen_and_a_half() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_LINES, f"README.md has {len(lines)} lines, more than {README_LINES}"


@pytest.mark.parametrize("path", DOCS[2:], ids=_name)
def test_every_docs_page_opens_with_a_summary_and_stays_short(path: Path) -> None:
    """Its title, then a paragraph of at most three lines; at most PAGE_LINES lines of its own."""
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# ") and not lines[1].strip(), f"{_name(path)}: no title line first"
    summary = [line for line in lines[2:] if line.strip()][:4]
    first = lines[2:].index("") if "" in lines[2:] else len(lines) - 2
    assert summary and 0 < first <= 3 and not summary[0].startswith(("|", "```", "<!--", "#", "-", "!")), (
        f"{_name(path)}: the page does not open with a summary paragraph of at most three lines"
    )
    own = _own_lines(path)
    assert len(own) <= PAGE_LINES, f"{_name(path)}: {len(own)} lines of its own, more than {PAGE_LINES}"
