"""Sharded mining survives a real kill: rerunning loses nothing and redoes no finished problem."""

import signal
import subprocess
import sys
import time

import pytest
from helpers import write_params

from autojudge.io import read_json
from autojudge.mining.shards import load_shard


@pytest.mark.slow
def test_kill_and_resume_redoes_no_finished_problem(repo, tmp_path, arith_dir):
    params = write_params(
        repo,
        tmp_path,
        arith_dir,
        {
            "mining.engine": "hf",
            "mining.problems": 16,
            "mining.shards": [0, 1],
            "mining.pool_size": 2,
            "mining.batch_size": 2,
        },
    )
    command = [
        sys.executable,
        str(repo / "stages" / "mine.py"),
        "--shard",
        "1",
        "--params",
        str(params),
        "--out",
        str(tmp_path / "shards"),
    ]
    problems = tmp_path / "shards" / "1" / "problems"
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while len(list(problems.glob("*.json"))) < 3 and time.time() < deadline and process.poll() is None:
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    finished = {path.name: (path.stat().st_mtime_ns, path.read_text()) for path in problems.glob("*.json")}
    assert 3 <= len(finished) < 8, "the kill should land while the shard is half done"
    assert not (tmp_path / "shards" / "1" / "summary.json").exists()

    rerun = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    after = {path.name: (path.stat().st_mtime_ns, path.read_text()) for path in problems.glob("*.json")}
    assert len(after) == 8  # shard 1 of 2 holds every other problem of 16
    assert all(after[name] == value for name, value in finished.items())  # untouched, not redone
    summary = read_json(tmp_path / "shards" / "1" / "summary.json")
    assert summary["mined_this_run"] == 8 - len(finished)
    assert summary["problems"] == 8
    assert sorted(int(p.id.rsplit("-", 1)[1]) for p in load_shard(tmp_path / "shards" / "1")) == list(
        range(1, 16, 2)
    )
