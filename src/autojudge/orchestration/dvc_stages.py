"""The pipeline's DVC stages as an orchestrator runs them.

The stage list comes from ``dvc.yaml`` through DVC itself (foreach stages expanded, e.g. ``mine@0``), in
topological generations: the stages of one generation do not depend on each other. A generation of one
stage runs as ``dvc repro --single-item <stage>``. Stages of a larger generation (the mining shards) run
in parallel, which ``dvc repro`` cannot do in one checkout (every ``dvc repro`` holds the repository
lock for as long as its stage runs): each one is checked with ``dvc status <stage>``, its command from
``dvc.yaml`` is run directly when DVC says it changed, and ``dvc commit --force <stage>`` records the
result in ``dvc.lock`` - what ``dvc repro`` does, minus holding the lock while the command runs. DVC
calls of one process are serialised by a lock; so DVC still decides what runs, and a shard killed
midway resumes from its finished problems (persisted outs) when it runs again.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from autojudge.errors import AutoJudgeError

TAIL_LINES = 40
TRANSIENT_EXIT = 75  # a stage script's exit status after a transient error (sysexits.h: EX_TEMPFAIL)
# killed from outside (the OOM killer, a stopped worker): -signal from Popen, 128 + signal from a shell
KILLED = frozenset({-signal.SIGKILL, -signal.SIGTERM, 128 + signal.SIGKILL, 128 + signal.SIGTERM})
DVC_RUN_FAILED = re.compile(r"failed to run: .*, exited with (-?\d+)$")  # dvc repro on a failed command
_DVC_LOCK = threading.Lock()


@dataclass(frozen=True)
class Stage:
    name: str  # DVC address, e.g. "train" or "mine@0"
    cmd: str


class StageError(AutoJudgeError):
    """A stage exited with an error; carries its command and the tail of its output."""

    def __init__(self, stage: str, command: str, returncode: int, tail: list[str]):
        self.stage, self.command, self.returncode, self.tail = stage, command, returncode, tail
        super().__init__(
            f"stage {stage} failed (exit {returncode}): {command}\n"
            f"--- last {len(tail)} lines of its output ---\n" + "\n".join(tail)
        )

    @property
    def status(self) -> int:
        """The stage command's exit status: its own, or the one ``dvc repro`` reports (DVC exits 255)."""
        for line in reversed(self.tail):
            if found := DVC_RUN_FAILED.search(line):
                return int(found.group(1))
        return self.returncode

    @property
    def transient(self) -> bool:
        """Worth retrying: the stage failed on a transient error (``TRANSIENT_EXIT``: a network error, a
        server unavailable) or was killed from outside; a user error (exit 2) or a bug (a traceback) is not."""
        return self.status == TRANSIENT_EXIT or self.status in KILLED


def stage_generations(root: Path) -> list[list[Stage]]:
    """Every stage of ``root/dvc.yaml`` in topological generations (each after all it depends on)."""
    import networkx as nx
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        graph = repo.index.graph  # edges point from a stage to the stages it depends on
        generations = nx.topological_generations(graph.reverse(copy=False))
        return [
            sorted((Stage(_address(root, s), s.cmd) for s in generation), key=_order)
            for generation in generations
        ]


def _address(root: Path, stage) -> str:
    """How ``dvc`` run in ``root`` names the stage: ``name`` in root's dvc.yaml, else ``path:name``."""
    dvcfile = Path(stage.path).resolve()
    if dvcfile.parent == root.resolve():
        return stage.name
    return f"{dvcfile.relative_to(root.resolve())}:{stage.name}"


def _order(stage: Stage) -> tuple:
    group, _, item = stage.name.partition("@")
    return (group, int(item) if item.isdigit() else 0, item)


def tool_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of stage commands: ``python`` and ``dvc`` are those of the running interpreter."""
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", **(extra or {})}


def run_logged(
    command: list[str] | str, cwd: Path, env: dict[str, str], on_line: Callable[[str], None]
) -> tuple[int, list[str]]:
    """Run ``command``, passing each output line (progress bars included) to ``on_line``; exit code, tail."""
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    with subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        shell=isinstance(command, str),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,  # universal newlines: a progress bar's carriage returns end lines too
        errors="replace",
    ) as process:
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.rstrip()
            if line:
                tail.append(line)
                on_line(line)
    return process.returncode, list(tail)


def _dvc(root: Path, *args: str, on_line: Callable[[str], None]) -> list[str]:
    command = [str(Path(sys.executable).parent / "dvc"), *args]
    code, tail = run_logged(command, root, tool_env(), on_line)
    if code != 0:
        raise StageError(args[-1], " ".join(["dvc", *args]), code, tail)
    return tail


def repro_stage(root: Path, stage: Stage, on_line: Callable[[str], None]) -> bool:
    """``dvc repro --single-item`` one stage; whether it ran (False: DVC found it up to date)."""
    ran = False

    def watch(line: str) -> None:
        nonlocal ran
        ran = ran or line.startswith("Running stage")
        on_line(line)

    _dvc(root, "repro", "--single-item", stage.name, on_line=watch)
    return ran


def is_up_to_date(root: Path, stage: Stage) -> bool:
    with _DVC_LOCK:
        output = _dvc(root, "status", "--json", stage.name, on_line=lambda _: None)
    return not json.loads(output[-1] if output else "{}")


def run_stage_command(
    root: Path, stage: Stage, on_line: Callable[[str], None], env: dict[str, str] | None = None
) -> bool:
    """Run one stage's command outside ``dvc repro`` (so several can run at once) and commit it.

    Returns whether it ran (False: DVC found it up to date).
    """
    if is_up_to_date(root, stage):
        return False
    # DVC_STAGE: the stage's address, which dvc repro gives every command it runs
    code, tail = run_logged(stage.cmd, root, tool_env({"DVC_STAGE": stage.name, **(env or {})}), on_line)
    if code != 0:
        raise StageError(stage.name, stage.cmd, code, tail)
    with _DVC_LOCK:
        _dvc(root, "commit", "--force", stage.name, on_line=on_line)
    return True


def device_waves(
    stages: list[Stage], devices: list[str] | None, cores: int | None = None
) -> list[list[tuple[Stage, dict[str, str]]]]:
    """Stages in waves run at once, each with its environment: one stage per device in a wave
    (``CUDA_VISIBLE_DEVICES`` set to it), or all in one wave when no devices are given, sharing the CPU's
    ``cores`` (default: this machine's): each stage gets ``OMP_NUM_THREADS`` = its share (at least one), so
    that the stages' OpenMP threads do not spin on each other's cores."""
    if not stages:
        return []
    if not devices:
        share = str(max(1, (cores or os.cpu_count() or 1) // len(stages)))
        return [[(stage, {"OMP_NUM_THREADS": share}) for stage in stages]]
    return [
        [
            (stage, {"CUDA_VISIBLE_DEVICES": device})
            for stage, device in zip(stages[i:], devices, strict=False)
        ]
        for i in range(0, len(stages), len(devices))
    ]
