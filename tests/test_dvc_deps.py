"""dvc.yaml's code dependencies follow the code: a stage depends on every file its script can import (its
import closure, tests/import_closure.py; a directory covers its files), and on no project code it cannot.

Read from dvc.yaml itself, so the stages that only real presets run (convert, finetune, distill, eagle:
``foreach`` over sections the toy params leave empty) are checked without running. vLLM imports the
plugin's other modules by name (``vllm_plugin.hooks``) in an engine that enables it, so a stage whose
closure holds ``vllm_plugin/engine.py`` needs the whole plugin.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
import yaml
from import_closure import import_closure

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PLUGIN = SRC / "autojudge" / "vllm_plugin"
CODE = ("src/", "stages/")
STAGES = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]


def definition(stage: str) -> dict:
    """A stage's definition: a ``foreach`` stage's ``do`` block, else the stage itself (``matrix`` too)."""
    return STAGES[stage].get("do", STAGES[stage])


@functools.cache
def needed(stage: str) -> frozenset[Path]:
    """The files a stage's command can import."""
    script = re.search(r"python (stages/\S+\.py)", definition(stage)["cmd"]).group(1)
    closure = import_closure(ROOT / script, SRC)
    return frozenset(closure | set(PLUGIN.rglob("*.py")) if PLUGIN / "engine.py" in closure else closure)


def code_deps(stage: str) -> list[Path]:
    return [ROOT / dep for dep in definition(stage)["deps"] if dep.startswith(CODE)]


def covers(dep: Path, path: Path) -> bool:
    return path == dep or dep in path.parents


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_a_stage_depends_on_all_the_code_it_can_import(stage: str) -> None:
    deps = code_deps(stage)
    missing = sorted(str(p.relative_to(ROOT)) for p in needed(stage) if not any(covers(d, p) for d in deps))
    assert not missing, f"stage {stage}: dvc.yaml deps leave out code its script imports: {missing}"


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_a_stage_depends_on_no_code_it_cannot_import(stage: str) -> None:
    closure = needed(stage)
    unused = [str(d.relative_to(ROOT)) for d in code_deps(stage) if not any(covers(d, p) for p in closure)]
    assert not unused, f"stage {stage}: dvc.yaml deps hold code its script never imports: {unused}"


def test_the_accuracy_threshold_policy_reruns_training() -> None:
    """The case that drifted: train calibrates its threshold with ``evaluation.calibration``."""
    assert SRC / "autojudge" / "evaluation" / "calibration.py" in needed("train")
    assert any(covers(d, SRC / "autojudge/evaluation/calibration.py") for d in code_deps("train"))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_closure_follows_every_import_that_can_run(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write(src / "pkg" / "__init__.py", "")
    write(src / "pkg" / "sub" / "__init__.py", "from . import rel\n")
    write(src / "pkg" / "sub" / "rel.py", "from ..leaf import x\n")
    write(src / "pkg" / "leaf.py", "x = 1\n")
    write(src / "pkg" / "lazy.py", "")
    write(src / "pkg" / "typed.py", "")
    write(src / "pkg" / "other.py", "import json\n")
    write(tmp_path / "stages" / "sibling.py", "import pkg.sub\n")
    script = write(
        tmp_path / "stages" / "main.py",
        "from typing import TYPE_CHECKING\n"
        "from sibling import helper\n"
        "if TYPE_CHECKING:\n    from pkg import typed\nelse:\n    import os\n"
        "def run():\n    from pkg.lazy import work\n",
    )
    found = {str(path.relative_to(tmp_path)) for path in import_closure(script, src)}
    assert found == {
        "stages/main.py",
        "stages/sibling.py",  # a sibling script, imported by name
        "src/pkg/__init__.py",  # a package's __init__ runs before its modules
        "src/pkg/sub/__init__.py",
        "src/pkg/sub/rel.py",  # relative imports
        "src/pkg/leaf.py",
        "src/pkg/lazy.py",  # an import inside a function
    }  # not pkg/typed.py (TYPE_CHECKING never runs), nor pkg/other.py (never imported)
