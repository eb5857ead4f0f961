"""Run one program with its tests in the sandbox, in separate processes, and classify the outcomes.

Threat model (model-written code that is buggy or careless, not a hardened jail):

* Contained: the program runs in a fresh interpreter (``python -I -S -B``) with only PATH, LANG,
  HOME and TMPDIR set, in an empty temporary working directory deleted afterwards, under
  RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NPROC, RLIMIT_NOFILE and a wall clock. It gets new
  network, PID and mount namespaces (as root directly, otherwise inside a user namespace): no
  network but a loopback that is down, no processes outlive the run (killing the namespace's PID 1
  kills them all), and every mount but the working directory is read-only. As root it also runs
  as the unprivileged user ``nobody`` (65534) with ``no_new_privs``.
* Not contained: reading what the file system lets ``nobody`` (or the caller) read; CPU and
  memory pressure on the machine within the limits; the report channel (a program written to
  forge its own test report can). RLIMIT_NPROC counts all processes of the sandbox user, so
  concurrent runs share it.
* Without namespaces (no root and no unprivileged user namespaces): audit hooks in the harness
  refuse sockets, name lookups, subprocesses, ctypes and writes outside the working directory,
  and the wall clock kills the process group. That is a best effort: a program can still get
  around audit hooks, and processes that leave the process group survive the run. The run's
  ``isolation`` says which mode it got; the first degraded run logs a warning.
"""

from __future__ import annotations

import json
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from pathlib import Path

from autojudge.errors import AutoJudgeError
from autojudge.sandbox.limits import NOBODY_UID, SandboxLimits
from autojudge.sandbox.outcomes import EXITED, FAIL, NOT_RUN, PASS, TIMEOUT, outcome_of_death

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
LAUNCHER = HERE / "launcher.py"
HARNESS_SOURCE = (HERE / "harness.py").read_text(encoding="utf-8")
STOP_GRACE_S = 3.0  # after SIGTERM, how long the launcher gets to take its run down (it hunts for 2 s)
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


class SandboxError(AutoJudgeError):
    """The sandbox itself cannot run programs here (e.g. no interpreter the sandbox user may run)."""


@dataclass(frozen=True)
class SandboxJob:
    """A program and its tests: Python snippets run after it in its namespace, or one stdin/stdout pair."""

    program: str
    tests: tuple[str, ...] = ()
    stdin: str = ""
    expected_stdout: str | None = None  # set: run the program as a script on ``stdin`` and compare

    @property
    def is_stdio(self) -> bool:
        return self.expected_stdout is not None

    @property
    def test_count(self) -> int:
        return 1 if self.is_stdio else len(self.tests)


@dataclass(frozen=True)
class RunResult:
    """The outcome class of each test, the captured output and how the run was isolated."""

    outcomes: tuple[str, ...]
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    isolation: Mapping[str, object]

    @property
    def passed(self) -> bool:
        return all(outcome == PASS for outcome in self.outcomes)


def same_output(actual: str, expected: str) -> bool:
    """Whether two program outputs match, ignoring trailing spaces on lines and blank lines at the ends."""

    def normalise(text: str) -> list[str]:
        return [line.rstrip() for line in text.strip().splitlines()]

    return normalise(actual) == normalise(expected)


def _exited(pid: int, pidfd: int | None, seconds: float | None) -> bool:
    """Wait up to ``seconds`` for ``pid`` to exit, without reaping it (its group id stays reserved)."""
    if pidfd is not None:
        return bool(select.select([pidfd], [], [], seconds)[0])
    deadline = None if seconds is None else time.monotonic() + seconds
    while True:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is not None:
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(0.005)


def _wait_or_stop(process: subprocess.Popen, seconds: float) -> bool:
    """Wait for the launcher until ``seconds``; then stop the run. Kills the group's leftovers; whether it timed out."""
    try:
        pidfd: int | None = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        timed_out = not _exited(process.pid, pidfd, seconds)
        if timed_out:
            os.kill(process.pid, signal.SIGTERM)  # the launcher kills its monitor, and the namespace goes
            if not _exited(process.pid, pidfd, STOP_GRACE_S):
                os.killpg(process.pid, signal.SIGKILL)
                _exited(process.pid, pidfd, None)
        with suppress(
            ProcessLookupError, PermissionError
        ):  # the launcher is not reaped: its group id is reserved
            os.killpg(process.pid, signal.SIGKILL)
    finally:
        if pidfd is not None:
            os.close(pidfd)
        process.wait()
    return timed_out


def _read_capped(handle, limit: int) -> str:
    handle.seek(0)
    return handle.read(limit).decode("utf-8", errors="replace")


def _parse_report(text: str) -> list[dict]:
    records = []
    for line in text.splitlines():
        with suppress(json.JSONDecodeError):
            record = json.loads(line)
            if isinstance(record, dict):
                records.append(record)
    return records


def _outcomes(
    job: SandboxJob, records: list[dict], timed_out: bool, stdout: str, stderr: str
) -> tuple[str, ...]:
    """One outcome per test from the harness's report, filling in what a dead process left unsaid."""
    outcomes: list[str | None] = [None] * job.test_count
    running: int | str | None = None
    status: dict = {}
    for record in records:
        if "running" in record:
            running = record["running"]
        elif "test" in record and isinstance(record["test"], int) and 0 <= record["test"] < len(outcomes):
            outcomes[record["test"]] = str(record["outcome"])
            running = None
        elif "status" in record:
            status = record["status"]
    death = TIMEOUT if timed_out else outcome_of_death(status.get("signal"), status.get("code"), stderr)
    if job.is_stdio and outcomes[0] is None and death == EXITED and status.get("code") == 0:
        outcomes[0] = PASS  # the script ended itself with os._exit(0): judge what it printed
    # died while the program ran (or before): every test shares its fate; while test i ran: the later ones never ran
    program_died = running == "program" or (running is None and all(o is None for o in outcomes))
    first_missing = True
    for index, outcome in enumerate(outcomes):
        if outcome is None:
            outcomes[index] = death if program_died or first_missing else NOT_RUN
            first_missing = False
    if job.is_stdio and outcomes[0] == PASS:
        outcomes[0] = PASS if same_output(stdout, job.expected_stdout or "") else FAIL
    return tuple(str(outcome) for outcome in outcomes)


class Sandbox:
    """Runs `SandboxJob`s one at a time (use `SandboxPool` for many at once); thread-safe."""

    def __init__(
        self, limits: SandboxLimits | None = None, namespaces: bool = True, user: int | None = NOBODY_UID
    ) -> None:
        self.limits = limits or SandboxLimits()
        self.namespaces = namespaces  # False: skip namespaces, for testing the fallback
        # as root, runs go as this user (None would keep root, which undoes most of the containment)
        self.user = user if os.geteuid() == 0 else None  # only root can switch users
        self._interpreter: str | None = None
        self._lock = threading.Lock()
        self._warned = False

    @property
    def interpreter(self) -> str:
        """A Python the sandbox user can run: ours, or the system's when ours lies in a private directory."""
        with self._lock:
            if self._interpreter is None:
                self._interpreter = self._find_interpreter()
            return self._interpreter

    def _find_interpreter(self) -> str:
        candidates = [sys.executable, os.path.realpath(sys.executable), getattr(sys, "_base_executable", "")]
        candidates += [shutil.which(name, path=SYSTEM_PATH) or "" for name in ("python3", "python")]
        probe = SandboxJob(program="import collections, itertools, json, math, re", tests=("pass",))
        errors = []
        for candidate in dict.fromkeys(c for c in candidates if c):
            try:
                if self._run(probe, candidate).passed:
                    return candidate
            except SandboxError as error:
                errors.append(f"{candidate}: {error}")
        raise SandboxError(f"no Python interpreter that the sandbox user can run ({'; '.join(errors)})")

    def run(self, job: SandboxJob) -> RunResult:
        """Run ``job`` in fresh processes and a fresh working directory."""
        return self._run(job, self.interpreter)

    def _config(self, interpreter: str, workdir: Path, job_fd: int, report_fd: int, tests: int) -> dict:
        limits = self.limits
        return {
            "interpreter": interpreter,
            "harness": HARNESS_SOURCE,
            "workdir": str(workdir),
            "job_fd": job_fd,
            "report_fd": report_fd,
            "user": self.user,
            "namespaces": self.namespaces,
            "limits": {
                "cpu_s": limits.cpu_s(tests),
                "memory_bytes": limits.memory_mb << 20,
                "file_size_bytes": limits.file_size_mb << 20,
                "processes": limits.processes,
                "open_files": limits.open_files,
            },
        }

    def _run(self, job: SandboxJob, interpreter: str) -> RunResult:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="autojudge-sandbox-", ignore_cleanup_errors=True) as private:
            private_dir = Path(private).resolve()
            private_dir.chmod(0o711)  # the sandbox user may pass through to its working directory only
            workdir = private_dir / "work"
            workdir.mkdir(mode=0o700)
            if self.user is not None:
                os.chown(workdir, self.user, self.user)
            payload = {"mode": "stdin" if job.is_stdio else "asserts", "program": job.program}
            payload |= {"tests": list(job.tests), "timeout_s": self.limits.timeout_s}
            (private_dir / "job.json").write_text(json.dumps(payload), encoding="utf-8")
            (private_dir / "stdin").write_text(job.stdin, encoding="utf-8")
            with ExitStack() as stack:
                job_file = stack.enter_context((private_dir / "job.json").open("rb"))
                stdin = stack.enter_context((private_dir / "stdin").open("rb"))
                report, stdout, stderr = (
                    stack.enter_context((private_dir / name).open("w+b"))
                    for name in ("report", "stdout", "stderr")
                )
                config = self._config(
                    interpreter, workdir, job_file.fileno(), report.fileno(), job.test_count
                )
                environment = {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
                environment |= {"HOME": str(workdir), "TMPDIR": str(workdir)}
                process = subprocess.Popen(
                    [sys.executable, "-I", "-S", str(LAUNCHER), json.dumps(config)],
                    stdin=stdin,
                    stdout=stdout,
                    stderr=stderr,
                    pass_fds=(job_file.fileno(), report.fileno()),
                    cwd=workdir,
                    env=environment,
                    start_new_session=True,
                )
                timed_out = _wait_or_stop(process, self.limits.wall_s(job.test_count))
                records = _parse_report(_read_capped(report, 1 << 22))
                out = _read_capped(stdout, self.limits.output_bytes)
                err = _read_capped(stderr, self.limits.output_bytes)
        for record in records:
            if "exec_error" in record:
                raise SandboxError(f"cannot start {interpreter} in the sandbox: {record['exec_error']}")
        isolation = next((r["isolation"] for r in records if "isolation" in r), {})
        if not isolation and not timed_out:
            raise SandboxError(f"the sandbox launcher failed: {err.strip()[-2000:]}")
        isolation = {**isolation, "interpreter": interpreter}
        self._warn_if_degraded(isolation)
        outcomes = _outcomes(job, records, timed_out, out, err)
        return RunResult(outcomes, out, err, time.perf_counter() - started, timed_out, isolation)

    def _warn_if_degraded(self, isolation: Mapping[str, object]) -> None:
        degraded = [k for k in ("network", "filesystem") if isolation.get(k) == "audit-hook"]
        if degraded and not self._warned:
            self._warned = True
            logger.warning(
                "sandbox: no namespaces for %s here; falling back to audit hooks in the child (weaker)",
                " and ".join(degraded),
            )
