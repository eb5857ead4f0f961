"""Every file the library and the stages write goes through ``autojudge.io.atomic_path`` (or the helpers
built on it), so that a killed or failing writer leaves the old file or none, never a torn one.

The scan reads the source of ``src/autojudge`` and ``stages/``: a call that writes a file (``write_text``,
``savefig``, ``torch.save``, ``open(..., "w")``, ...) must sit inside a ``with atomic_path(...)`` block,
unless its module and function are in ``ALLOWED`` with the reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("src/autojudge", "stages")

WRITE_METHODS = {
    "write_text", "write_bytes", "savefig", "to_csv", "to_json", "to_parquet", "write_table",
    "save_pretrained", "save_to_disk",
}  # fmt: skip
WRITE_FUNCTIONS = {"save_file", "torch.save", "np.save", "np.savez", "json.dump", "pickle.dump"}
OPENERS = {"open", "fdopen"}  # builtin open, Path.open, os.fdopen, gzip.open: a write when the mode says so

ALLOWED = {  # module:function -> why it may write directly
    "src/autojudge/sandbox/runner.py:Sandbox._run": "a sandboxed job's files, in its private temporary "
    "directory (deleted afterwards)",
    "src/autojudge/sandbox/launcher.py:_write_file": "kernel files (/proc/self/uid_map), not outputs",
    "src/autojudge/tracking/store.py:_create_once": "an empty lock file, not an output",
    "src/autojudge/vllm_plugin/counters.py:LossyCounts.add": "a worker's per-request log, appended step by "
    "step and read back by the process that decodes (a line a step, in a temporary directory), not an output",
}


def _name(node: ast.expr) -> str:
    """``a.b.c`` for a name or attribute chain, else ``""``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _name(node.value)
        return f"{inner}.{node.attr}" if inner else node.attr
    return ""


def _opens_for_writing(call: ast.Call) -> bool:
    """Whether an ``open`` call's mode (its ``mode`` keyword or its first string argument) writes."""
    modes = [k.value for k in call.keywords if k.arg == "mode"]
    modes += [arg for arg in call.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
    mode = modes[0].value if modes and isinstance(modes[0], ast.Constant) else "r"
    return any(flag in mode for flag in "wax+")


def is_write(call: ast.Call) -> bool:
    name = _name(call.func)
    last = name.rpartition(".")[2]
    if last in OPENERS:
        return _opens_for_writing(call)
    return (isinstance(call.func, ast.Attribute) and last in WRITE_METHODS) or name in WRITE_FUNCTIONS


class WriteFinder(ast.NodeVisitor):
    """Direct writes outside ``with atomic_path(...)``: (function qualname, line) of each."""

    def __init__(self) -> None:
        self.scope: list[str] = []
        self.atomic = 0
        self.found: list[tuple[str, int]] = []

    def _scoped(self, node: ast.AST, name: str) -> None:
        self.scope.append(name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scoped(node, node.name)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._scoped(node, node.name)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._scoped(node, node.name)

    def visit_With(self, node: ast.With) -> None:
        atomic = any(
            isinstance(item.context_expr, ast.Call) and _name(item.context_expr.func).endswith("atomic_path")
            for item in node.items
        )
        self.atomic += atomic
        self.generic_visit(node)
        self.atomic -= atomic

    def visit_Call(self, node: ast.Call) -> None:
        if not self.atomic and is_write(node):
            self.found.append((".".join(self.scope) or "<module>", node.lineno))
        self.generic_visit(node)


def direct_writes(root: Path = REPO) -> dict[str, list[int]]:
    """``module:function`` -> lines of the direct file writes in it."""
    writes: dict[str, list[int]] = {}
    for top in ROOTS:
        for path in sorted((root / top).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            finder = WriteFinder()
            finder.visit(ast.parse(path.read_text(encoding="utf-8")))
            for function, line in finder.found:
                writes.setdefault(f"{relative}:{function}", []).append(line)
    return writes


def test_the_scan_recognises_writes_and_the_atomic_block():
    source = """
def f(path, figure, frame, state):
    path.write_text("x")
    figure.savefig(path)
    torch.save(state, path)
    with open(path, "w") as handle, path.open(mode="ab") as other:
        pass
    with open(path) as handle, path.open("rb") as other:
        handle.read()
    with atomic_path(path) as temporary:
        frame.to_csv(temporary)
"""
    finder = WriteFinder()
    finder.visit(ast.parse(source))
    assert [line for _, line in finder.found] == [3, 4, 5, 6, 6]


def test_every_stage_output_is_written_atomically():
    writes = direct_writes()
    unexplained = sorted(
        f"{place} (line {lines[0]})" for place, lines in writes.items() if place not in ALLOWED
    )
    assert not unexplained, (
        "files written directly, not through autojudge.io.atomic_path (a torn file if the writer dies): "
        + ", ".join(unexplained)
    )
    stale = sorted(set(ALLOWED) - set(writes))
    assert not stale, f"ALLOWED lists functions that no longer write directly: {stale}"
