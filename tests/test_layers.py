"""The library's layers: a package imports only its own modules and those of lower layers (lazy,
function-level imports included), and no two modules import each other in a circle.

The order, lowest first, is the one ARCHITECTURE.md draws; ``rules.config`` (the rule vocabulary, no torch)
sits low so that params and vLLM's frontend can validate rule names without the rules themselves.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "autojudge"
LAYERS = [
    ("errors",),
    ("io",),
    ("rules.config",),
    ("params",),
    ("sandbox",),
    ("tasks",),
    ("engines",),
    ("models",),
    ("mining",),
    ("features",),
    ("heads",),
    ("rules",),
    ("decoding",),
    ("selfjudge",),
    ("tracking",),
    ("vllm_plugin",),
    ("evaluation",),
    ("world",),
    ("bench",),
    ("registry",),
    ("orchestration",),
    ("cli",),
    ("__main__",),
]
LAYER_OF = {component: level for level, names in enumerate(LAYERS) for component in names}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def component(module: str) -> str:
    """The layer component of ``module`` (relative to ``autojudge``): its longest listed prefix."""
    parts = module.split(".")
    for size in range(len(parts), 0, -1):
        if ".".join(parts[:size]) in LAYER_OF:
            return ".".join(parts[:size])
    raise KeyError(module)


def imports(path: Path) -> list[tuple[str, bool]]:
    """(imported autojudge module, whether at module level) for every import in ``path``."""
    tree = ast.parse(path.read_text())
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("autojudge"):
            base = node.module.removeprefix("autojudge").lstrip(".")
            names = [f"{base}.{alias.name}".lstrip(".") for alias in node.names]
            names = [n if (SRC / n.replace(".", "/")).with_suffix(".py").exists() else base for n in names]
        elif isinstance(node, ast.Import):
            names = [
                a.name.removeprefix("autojudge").lstrip(".")
                for a in node.names
                if a.name.startswith("autojudge")
            ]
        found += [(name, id(node) in top_level) for name in names if name]
    return found


MODULES = {module_name(path): path for path in SRC.rglob("*.py") if module_name(path)}


def test_every_module_belongs_to_a_layer() -> None:
    unplaced = []
    for module in MODULES:
        try:
            component(module)
        except KeyError:
            unplaced.append(module)
    assert not unplaced, f"modules outside every layer (add them to LAYERS and ARCHITECTURE.md): {unplaced}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module: str) -> None:
    mine = component(module)
    upward = [
        name
        for name, _ in imports(MODULES[module])
        if component(name) != mine and LAYER_OF[component(name)] >= LAYER_OF[mine]
    ]
    assert not upward, f"{module} (layer {mine}) imports a same or higher layer: {upward}"


def test_no_import_circles() -> None:
    graph = {m: {n for n, top in imports(p) if top and n in MODULES and n != m} for m, p in MODULES.items()}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                raise AssertionError(f"import circle: {' -> '.join([*trail[trail.index(nxt) :], nxt])}")
            if nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
