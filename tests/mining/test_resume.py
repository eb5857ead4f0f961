"""Sharded mining survives a real kill: rerunning loses nothing and redoes no finished problem (the
pipeline's restart test, tests/flows/test_deployment.py, kills both tasks' mining through Prefect)."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import write_params

from autojudge.io import read_json
from autojudge.mining.shards import load_shard
from autojudge.tasks.pyfunc import write_pyfunc_splits


def _mine_command(repo: Path, params: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        str(repo / "stages" / "mine.py"),
        "--shard",
        "1",
        "--params",
        str(params),
        "--out",
        str(out),
    ]


def _finished(problems: Path) -> dict[str, tuple[int, str]]:
    return {path.name: (path.stat().st_mtime_ns, path.read_text()) for path in problems.glob("*.json")}


def kill_and_resume(repo: Path, params: Path, out: Path, cwd: Path, kill_after: int) -> tuple[dict, dict]:
    """Mine shard 1, SIGKILL it once ``kill_after`` problems are written, rerun; the finished files
    before the kill and after the rerun."""
    command = _mine_command(repo, params, out)
    problems = out / "1" / "problems"
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while (
        len(list(problems.glob("*.json"))) < kill_after and time.time() < deadline and process.poll() is None
    ):
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    before = _finished(problems)
    assert not (out / "1" / "summary.json").exists()
    rerun = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    after = _finished(problems)
    assert all(after[name] == value for name, value in before.items())  # untouched, not redone
    assert read_json(out / "1" / "summary.json")["mined_this_run"] == len(after) - len(before)
    return before, after


@pytest.mark.slow
def test_code_mining_killed_and_resumed_labels_like_an_uninterrupted_run(repo, tmp_path, params):
    """The pyfunc task (answers are sandboxed test reports): a kill mid-shard redoes no finished problem,
    changes no label, and the shard still holds its own problems (shard 1 of 2: every other one)."""
    data = tmp_path / "pyfunc"
    write_pyfunc_splits(data, {"train": 12, "validation": 2, "test": 2}, params.toy.seed)
    settings = write_params(
        repo,
        tmp_path,
        data,
        {
            "task.name": "pyfunc",
            "mining.engine": "hf",
            "mining.problems": 12,
            "mining.shards": [0, 1],
            "mining.pool_size": 2,
            "mining.batch_size": 2,
            "mining.max_response_tokens": 48,
        },
    )
    before, after = kill_and_resume(repo, settings, tmp_path / "killed", tmp_path, kill_after=2)
    assert 2 <= len(before) < 6 == len(after), "the kill should land while the shard is half done"
    uninterrupted = subprocess.run(
        _mine_command(repo, settings, tmp_path / "whole"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert uninterrupted.returncode == 0, uninterrupted.stderr
    resumed = {p.id: p for p in load_shard(tmp_path / "killed" / "1")}
    assert sorted(int(i.rsplit("-", 1)[1]) for i in resumed) == list(range(1, 12, 2))
    whole = {p.id: p for p in load_shard(tmp_path / "whole" / "1")}
    assert resumed.keys() == whole.keys()
    for problem_id, problem in whole.items():
        assert resumed[problem_id].mismatches == problem.mismatches, problem_id
        assert resumed[problem_id].response_ids == problem.response_ids
        assert resumed[problem_id].answer == problem.answer
    assert all(p.answer.startswith('{"tests":[') for p in whole.values())  # test reports, not numbers
