"""A stage script run before its inputs exist: ``stage <name>: <the missing file>``, one line on stderr, the
user-error status, and nothing written (``orchestration.stage.run_stage``)."""

import subprocess
import sys

import pytest

from autojudge.orchestration.stage import USER_ERROR_EXIT


@pytest.mark.parametrize(
    ("stage", "line"),
    [
        ("train", "stage train: file not found: features/spec.json"),
        ("register", "stage register: judge head not found: heads/head.safetensors"),
    ],
)
def test_a_stage_without_its_input_names_the_file_in_one_line(repo, tmp_path, stage, line):
    done = subprocess.run(
        [sys.executable, str(repo / "stages" / f"{stage}.py"), "--params", str(repo / "params.yaml")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == USER_ERROR_EXIT
    assert done.stderr.strip() == line
    assert list(tmp_path.iterdir()) == []
