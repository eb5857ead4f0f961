"""A stage's dvc.yaml ``params:`` names every key it reads, checked on a real stage process: stage prepare
(seconds) for each task, run as DVC runs it, with its reads recorded (``autojudge.params.access``). The
suite's pipeline run checks every stage the same way (tests/test_pipeline.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from declared_params import declared_params, recorded_reads, undeclared
from helpers import set_params
from pipeline_run import PIPELINE_PARAMS

from autojudge.params.access import ACCESS_LOG, STAGE

ROOT = Path(__file__).resolve().parents[1]
TASKS = ("arith", "pyfunc")


@pytest.fixture(scope="module")
def prepare_reads(tmp_path_factory) -> dict[str, dict[str, set[str]]]:
    """Stage prepare run for each task in a directory of its own, on small splits; its recorded reads."""
    workdir, log = tmp_path_factory.mktemp("prepare"), tmp_path_factory.mktemp("reads")
    (workdir / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    set_params(workdir / "params.yaml", {k: PIPELINE_PARAMS[k] for k in ("toy.splits", "toy.code_splits")})
    for task in TASKS:
        subprocess.run(
            [sys.executable, str(ROOT / "stages" / "prepare.py"), "--task", task],
            cwd=workdir,
            env={**os.environ, ACCESS_LOG: str(log), STAGE: f"prepare@{task}"},
            capture_output=True,
            check=True,
        )
    return recorded_reads(log)


@pytest.mark.parametrize("task", TASKS)
def test_stage_prepare_declares_every_params_key_it_reads(prepare_reads, task: str) -> None:
    stage = f"prepare@{task}"
    reads = prepare_reads[stage]
    assert reads[task], "no reads recorded"
    missing = undeclared(reads, declared_params(ROOT)[stage])
    assert not missing, f"stage {stage} reads params its dvc.yaml params: list leaves out: {missing}"


def test_every_declared_key_is_in_the_params_file() -> None:
    """DVC stops on a declared key that params.yaml leaves to the schema's default: write it out, or declare
    its section."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())

    def present(key: str) -> bool:
        node = params
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        return True

    absent = {stage: [k for k in keys if not present(k)] for stage, keys in declared_params(ROOT).items()}
    assert not {stage: keys for stage, keys in absent.items() if keys}, absent
