"""Driving DVC stages from an orchestrator, on a tiny real DVC project: stage order, parallel stages
recorded in dvc.lock, skipping what DVC finds up to date, and failures that name stage and command."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from autojudge.orchestration.dvc_stages import (
    TRANSIENT_EXIT,
    Stage,
    StageError,
    device_waves,
    is_up_to_date,
    repro_stage,
    run_stage_command,
    stage_generations,
    tool_env,
)

PIPELINE = {
    "stages": {
        "source": {"cmd": "echo 5 > source.txt", "outs": ["source.txt"]},
        "part": {
            "foreach": "${parts}",
            "do": {
                "cmd": "python -c \"import time; time.sleep(1); open('part${item}.txt', 'w').write('${item}')\"",
                "deps": ["source.txt"],
                "outs": ["part${item}.txt"],
            },
        },
        "total": {
            "cmd": "cat part*.txt > total.txt",
            "deps": ["part0.txt", "part1.txt"],
            "outs": ["total.txt"],
        },
    }
}


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump(PIPELINE, sort_keys=False))
    (tmp_path / "params.yaml").write_text("parts: [0, 1]\n")
    subprocess.run(["dvc", "init", "--no-scm", "-q"], cwd=tmp_path, env=tool_env(), check=True)
    return tmp_path


def names(generations: list[list[Stage]]) -> list[list[str]]:
    return [[stage.name for stage in generation] for generation in generations]


def test_generations_follow_the_dependencies(project):
    generations = stage_generations(project)
    assert names(generations) == [["source"], ["part@0", "part@1"], ["total"]]
    assert generations[1][1].cmd.endswith("open('part1.txt', 'w').write('1')\"")


def test_parallel_stages_are_committed_and_then_up_to_date(project):
    source, parts, total = stage_generations(project)
    lines: list[str] = []
    assert repro_stage(project, source[0], lines.append)
    assert any(line.startswith("Running stage 'source'") for line in lines)
    with ThreadPoolExecutor(2) as pool:
        ran = list(pool.map(lambda stage: run_stage_command(project, stage, lines.append), parts))
    assert ran == [True, True]
    lock = yaml.safe_load((project / "dvc.lock").read_text())["stages"]
    assert {"part@0", "part@1"} <= set(lock)
    assert all(is_up_to_date(project, stage) for stage in parts)
    assert [run_stage_command(project, stage, lines.append) for stage in parts] == [False, False]
    assert repro_stage(project, total[0], lines.append)
    assert not repro_stage(project, total[0], lines.append)  # DVC: unchanged
    assert (project / "total.txt").read_text() == "01"
    status = subprocess.run(["dvc", "status"], cwd=project, env=tool_env(), capture_output=True, text=True)
    assert "up to date" in status.stdout
    (project / "source.txt").write_text("6\n")  # a changed dependency: DVC runs the shard again
    assert not is_up_to_date(project, parts[0])
    assert run_stage_command(project, parts[0], lines.append)


def test_a_failing_command_names_stage_command_and_output(project):
    broken = {"cmd": "echo 'stage part: bad input x.json' >&2; exit 2", "outs": ["broken.txt"]}
    (project / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"broken": broken}}))
    [[stage]] = stage_generations(project)
    with pytest.raises(StageError) as failure:
        run_stage_command(project, stage, print)
    error = failure.value
    assert (error.stage, error.returncode) == ("broken", 2)
    assert "stage broken failed (exit 2): echo" in str(error) and "bad input x.json" in str(error)
    assert not error.transient


def test_a_command_run_directly_knows_its_stage_as_under_dvc_repro(project):
    """``DVC_STAGE`` names the stage (``dvc repro`` sets it; a stage's params reads are recorded under it)."""
    named = {"cmd": "echo $DVC_STAGE > named.txt", "outs": ["named.txt"]}
    (project / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"named": {"foreach": [0], "do": named}}}))
    [[stage]] = stage_generations(project)
    assert run_stage_command(project, stage, print)
    assert (project / "named.txt").read_text() == "named@0\n"


def test_a_crash_is_transient_and_repro_failures_name_the_stage(project):
    crash = StageError("mine@0", "python stages/mine.py --shard 0", -9, ["Killed"])
    assert crash.transient
    with pytest.raises(StageError, match="stage missing failed"):
        repro_stage(project, Stage("missing", ""), print)


FAILING_STAGE = """
from autojudge.orchestration.stage import run_stage, stage_arguments

FAILURES = {"network": ConnectionRefusedError(111, "Connection refused"), "bug": ZeroDivisionError("oops")}


def body(params, args):
    raise FAILURES[args.failure]


parser = stage_arguments("a stage that fails")
parser.add_argument("--failure")
run_stage("fails", body, parser)
"""


def test_a_stage_says_whether_its_error_is_transient_through_dvc_repro_too(project, repo):
    """A network error in a stage script exits with TRANSIENT_EXIT and one line (retried), read back under
    ``dvc repro`` (which exits with 255) from DVC's report; a bug keeps its traceback and exit 1 (not retried)."""
    (project / "fails.py").write_text(FAILING_STAGE)
    (project / "stage_params.yaml").write_text((repo / "params.yaml").read_text())
    stage = {"cmd": "python fails.py --params stage_params.yaml --failure ${item}", "outs": ["${item}.txt"]}
    (project / "dvc.yaml").write_text(
        yaml.safe_dump({"stages": {"fails": {"foreach": ["network", "bug"], "do": stage}}})
    )
    [generation] = stage_generations(project)
    stages = {stage.name: stage for stage in generation}
    with pytest.raises(StageError) as failure:
        repro_stage(project, stages["fails@network"], print)
    assert failure.value.status == TRANSIENT_EXIT and failure.value.transient
    assert "stage fails: ConnectionRefusedError: [Errno 111] Connection refused" in failure.value.tail
    with pytest.raises(StageError) as failure:
        run_stage_command(project, stages["fails@bug"], print)
    assert failure.value.status == 1 and not failure.value.transient
    assert "ZeroDivisionError: oops" in failure.value.tail


def test_device_waves_put_one_stage_per_device():
    stages = [Stage(f"mine@{i}", f"mine {i}") for i in range(3)]
    waves = device_waves(stages, ["0", "1"])
    assert [[(s.name, env["CUDA_VISIBLE_DEVICES"]) for s, env in wave] for wave in waves] == [
        [("mine@0", "0"), ("mine@1", "1")],
        [("mine@2", "0")],
    ]
    # a CPU worker: one wave, the cores shared out (at least one thread each)
    assert device_waves(stages, None, cores=16) == [[(s, {"OMP_NUM_THREADS": "5"}) for s in stages]]
    assert device_waves(stages, None, cores=2) == [[(s, {"OMP_NUM_THREADS": "1"}) for s in stages]]
    assert device_waves([], ["0"]) == device_waves([], None) == []
