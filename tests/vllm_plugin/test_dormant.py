"""Dormant means harmless: the entry point is cheap and light, and a failing hook never breaks an import."""

from __future__ import annotations

import json
import subprocess
import sys

from autojudge.vllm_plugin import hooks

HEAVY = ("datasets", "pandas", "sklearn", "math_verify", "mlflow", "transformers")
IMPORT_BUDGET_SECONDS = 0.3

# What vLLM does in a fresh process: import its engine arguments, then load the general plugins.
PROBE = r"""
import json, sys, time
HEAVY = %r
if sys.argv[1] == "with-vllm":
    import vllm.engine.arg_utils
before = {m for m in HEAVY if m in sys.modules}
start = time.perf_counter()
from autojudge.vllm_plugin import register
register()
seconds = time.perf_counter() - start
added = sorted({m for m in HEAVY if m in sys.modules} - before)
torch = "torch" in sys.modules
from vllm.engine.arg_utils import EngineArgs  # bare: the hook runs when vLLM imports it
patched = hasattr(EngineArgs.create_engine_config, "_autojudge_original")
print(json.dumps({"seconds": seconds, "added": added, "torch": torch, "patched": patched}))
"""


def _probe(mode: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE % (HEAVY,), mode], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_entry_point_costs_little_and_imports_nothing_heavy():
    """One fresh interpreter as vLLM loads the plugin and one with nothing imported before it (each costs
    a vLLM import): what the budget guards against is an import of something heavy, seconds, not ms."""
    with_vllm, bare = _probe("with-vllm"), _probe("bare")
    assert with_vllm["seconds"] < IMPORT_BUDGET_SECONDS, f"register() took {with_vllm['seconds']:.3f} s"
    assert with_vllm["added"] == bare["added"] == [], (with_vllm, bare)
    assert with_vllm["patched"] and bare["patched"]  # the frontend hook is in place either way
    assert not bare["torch"]  # register() alone imports no torch


def test_a_failing_hook_is_recorded_not_raised(tmp_path, monkeypatch):
    (tmp_path / "autojudge_probe_module.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def broken(module):
        raise AttributeError("no such function in this vLLM")

    hooks.when_imported("autojudge_probe_module", broken)
    import autojudge_probe_module

    assert autojudge_probe_module.VALUE == 1
    failure = [why for where, why in hooks.FAILURES.items() if where.startswith("autojudge_probe_module")]
    assert failure == ["AttributeError: no such function in this vLLM"]
    monkeypatch.delitem(sys.modules, "autojudge_probe_module")
    hooks.FAILURES.clear()
