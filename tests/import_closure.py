"""The files a stage script can import: its import closure inside the project, read statically.

Every ``import`` statement counts, at module level or inside a function (stages import lazily to start
light), except those under ``if TYPE_CHECKING:``, which never run. A module brings its packages'
``__init__`` files with it (Python runs them first), and a script's bare ``import x`` of a sibling script
(``from train import train`` in stages/) brings that script. Imports from outside ``src`` and the
script's directory (the standard library, third parties) are not followed.
"""

from __future__ import annotations

import ast
from pathlib import Path


def import_closure(script: Path, src: Path) -> set[Path]:
    """``script`` and every file under ``src`` or beside ``script`` that it imports, transitively."""
    found: set[Path] = set()
    pending = [script]
    while pending:
        path = pending.pop()
        if path in found:
            continue
        found.add(path)
        roots = (src,) if path.is_relative_to(src) else (src, path.parent)
        for module in _imported_modules(path, src):
            pending += _module_files(module, roots)
    return found


def _imported_modules(path: Path, src: Path) -> set[str]:
    """Dotted names of the modules ``path`` imports outside ``TYPE_CHECKING`` blocks; for ``from m import
    n``, both ``m`` and ``m.n`` (a name may be a submodule or an attribute: ``_module_files`` tells)."""
    names: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, path, src)
            names |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return names


def _runtime_nodes(tree: ast.AST):
    """Every node of ``tree`` outside the bodies of ``if TYPE_CHECKING:`` (their ``else`` runs)."""
    for node in ast.iter_child_nodes(tree):
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for branch in node.orelse:
                yield branch
                yield from _runtime_nodes(branch)
        else:
            yield from _runtime_nodes(node)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(node: ast.ImportFrom, path: Path, src: Path) -> str:
    """The module a ``from`` import names, relative imports resolved against ``path``'s package."""
    if not node.level:
        return node.module or ""
    package = path.relative_to(src).parent.parts
    return ".".join([*package[: len(package) - node.level + 1], *([node.module] if node.module else [])])


def _module_files(module: str, roots: tuple[Path, ...]) -> list[Path]:
    """The files Python runs to import dotted ``module`` from the first of ``roots`` that has it: each
    package's ``__init__.py`` on the way, then the module itself; none when no root has it."""
    parts = module.split(".")
    for root in roots:
        files = []
        for size in range(1, len(parts) + 1):
            stem = root.joinpath(*parts[:size])
            if (stem / "__init__.py").is_file():
                files.append(stem / "__init__.py")
            elif stem.with_suffix(".py").is_file():
                files.append(stem.with_suffix(".py"))
                break
            else:
                break
        if files:
            return files
    return []
