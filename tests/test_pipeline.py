"""The DVC pipeline end to end on small splits: a full run, a no-op rerun, and a partial rerun.

One real `dvc repro` in a copy of the repository (real vLLM mining, real MLflow store), shared by
the tests of this module through a module-scoped fixture; they run in order.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import set_params

SMALL = {
    "toy.splits": {"train": 48, "validation": 20, "test": 24, "shifted": 12},
    "mining.problems": 48,
    "mining.pool_size": 24,
    "train.folds": 3,
    "evaluate.topk": [4],
    "evaluate.recalls": [0.8],
    "train.threshold_policy": "accuracy",  # exercises the calibration decode (20 validation problems)
    "train.calibration_points": 3,
    "selfjudge.problems": 24,
    "selfjudge.engine": "hf",
    "selfjudge.tau": -20.0,  # set directly: on 24 problems the calibrated tau leaves no important row in validation
    "compare.limit": 6,
    "compare.recalls": [0.8],
    "compare.topk": [4],
    "compare.thresholds": {"fsd-js": [0.05], "kl-mask": [0.2], "target-entropy": [0.69]},
    "bench.problems": 2,
    "bench.windows": [8],
    "bench.overhead_window": 8,
    "bench.thresholds": [],
    "bench.repeats": 1,
    "bench.batch_sizes": [1, 2],
    "bench.accuracy_problems": 2,
}


def _copy_repository(repo: Path, destination: Path) -> Path:
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.split()
    for name in files:
        source = repo / name
        if source.is_file() and not name.startswith(("mlflow/", "results/")):
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    subprocess.run(["git", "init", "-q"], cwd=destination, check=True)
    return destination


def _own_store_env() -> dict[str, str]:
    """The environment without a tracking URI that earlier tests in this process may have set
    (MLflow 3 exports it), so that the copy uses its own store under mlflow/."""
    return {key: value for key, value in os.environ.items() if key != "MLFLOW_TRACKING_URI"}


def dvc(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    bin_dir = Path(sys.executable).parent  # the stages call `python`: the one running these tests
    env = {**_own_store_env(), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run(
        [str(bin_dir / "dvc"), *args], cwd=workdir, env=env, capture_output=True, text=True, timeout=1800
    )
    assert result.returncode == 0, (
        f"dvc {' '.join(args)} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    )
    return result


def stages_run(output: str) -> set[str]:
    return {
        line.split("'")[1].split("@")[0] for line in output.splitlines() if line.startswith("Running stage")
    }


@pytest.fixture(scope="module")
def pipeline_copy(repo, tmp_path_factory):
    workdir = _copy_repository(repo, tmp_path_factory.mktemp("pipeline"))
    set_params(workdir / "params.yaml", SMALL)
    first = dvc(workdir, "repro")
    return workdir, first


def _registered_versions(workdir: Path, name: str) -> list[str]:
    code = (
        "import json, mlflow; from autojudge.registry.tracking import use_tracking; use_tracking();"
        f"print(json.dumps([str(v.version) for v in mlflow.MlflowClient().search_model_versions(\"name='{name}'\")]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=workdir,
        env=_own_store_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_full_run_registers_a_head_with_its_card(pipeline_copy):
    workdir, first = pipeline_copy
    assert stages_run(first.stdout) == {
        "prepare",
        "mine",
        "merge",
        "features",
        "train",
        "evaluate",
        "relabel",
        "train_selfjudge",
        "compare",
        "bench",
        "register",
    }
    registered = json.loads((workdir / "registry" / "registered.json").read_text())
    assert registered["model_name"] == "autojudge-arith-toy" and registered["alias"] == "candidate"
    evaluation = json.loads((workdir / "metrics" / "evaluate.json").read_text())
    assert {row["method"] for row in evaluation["settings"]} == {"judge", "topk", "exact", "target", "draft"}
    assert (workdir / "plots" / "accuracy_vs_mat.png").stat().st_size > 10_000
    comparison = json.loads((workdir / "metrics" / "compare.json").read_text())
    assert set(comparison["splits"]) == {"test", "shifted"}
    assert {"judge", "selfjudge", "fsd-js", "exact"} <= set(comparison["splits"]["shifted"]["table"])
    bench = json.loads((workdir / "metrics" / "bench.json").read_text())
    assert all(bench["sd_exact_equals_target"].values()) and "judge_overhead_percent" in bench["headline"]
    mining = json.loads((workdir / "metrics" / "mining.json").read_text())
    assert mining["problems"] == 48 and mining["mismatches"] > mining["important"] > 0
    assert _registered_versions(workdir, "autojudge-arith-toy") == ["1"]


@pytest.mark.slow
def test_second_repro_does_nothing(pipeline_copy):
    workdir, _ = pipeline_copy
    second = dvc(workdir, "repro")
    assert stages_run(second.stdout) == set()
    assert "up to date" in dvc(workdir, "status").stdout
    assert _registered_versions(workdir, "autojudge-arith-toy") == ["1"]


@pytest.mark.slow
def test_changing_the_c_grid_reruns_train_and_what_follows_only(pipeline_copy):
    workdir, _ = pipeline_copy
    set_params(workdir / "params.yaml", {"train.c_grid": [0.1, 0.001]})
    third = dvc(workdir, "repro")
    assert stages_run(third.stdout) == {
        "train",
        "train_selfjudge",
        "evaluate",
        "compare",
        "bench",
        "register",
    }
    assert sorted(_registered_versions(workdir, "autojudge-arith-toy")) == ["1", "2"]
