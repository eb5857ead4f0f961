"""The command line's fixtures: run it as users run it (a subprocess), with params over the toy splits."""

import subprocess
import sys

import pytest


@pytest.fixture
def autojudge():
    """``autojudge ARGS`` run in ``cwd`` as a subprocess; its completed process."""

    def run(*args, cwd):
        return subprocess.run(
            [sys.executable, "-m", "autojudge", *args], cwd=cwd, capture_output=True, text=True, timeout=600
        )

    return run


@pytest.fixture
def eval_params(repo, tmp_path, arith_dir):
    """The project's params file, on the session's arith splits and the committed toy pair."""
    params = tmp_path / "params.yaml"
    params.write_text(
        (repo / "params.yaml")
        .read_text()
        .replace("data_dir: data/arith", f"data_dir: {arith_dir}")
        .replace("models/toy_mixed/", f"{repo}/models/toy_mixed/")
    )
    return params
