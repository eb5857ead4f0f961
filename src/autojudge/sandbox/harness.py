"""Sandbox harness, exec'd as ``python -I -S -B -c SOURCE JOB_FD REPORT_FD ISOLATION WORKDIR`` (stdlib only).

It reads the job (program, tests, mode) from JOB_FD and closes it, so the working directory the
program sees stays empty, then writes JSON lines to REPORT_FD: ``{"running": i}`` before test i
(``"program"`` while the program itself runs) and ``{"test": i, "outcome": ...}`` after it, so the
parent can tell which test a killed process was running. Processes the program forks never
report: they exit as soon as control returns to the harness. WORKDIR only labels the process.

Where the launcher could not create a network namespace or read-only mounts, audit hooks stand
in (``_install_audit_hooks``): a best effort that a determined program can get around.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import sys
from contextlib import suppress
from pathlib import Path

MAIN_PID = os.getpid()
NETWORK_ERRNOS = {
    errno.ENETUNREACH,
    errno.ENETDOWN,
    errno.EHOSTUNREACH,
    errno.ECONNREFUSED,
    errno.EADDRNOTAVAIL,
    errno.ECONNRESET,
    errno.ECONNABORTED,
}
PERMISSION_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS}
SPAWN_EVENTS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile"}
NATIVE_EVENTS = {"ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.call_function"}
NETWORK_EVENTS = {
    "socket.__new__",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyaddr",
    "socket.getnameinfo",
}
BLOCKED_IMPORTS = {"_ctypes", "_posixsubprocess"}
# events that change the file system, with the positions of their path arguments
WRITE_EVENTS = {
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.mkdir": (0,),
    "os.rename": (0, 1),
    "os.link": (0, 1),
    "os.symlink": (1,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.truncate": (0,),
    "os.utime": (0,),
    "os.mkfifo": (0,),
    "os.mknod": (0,),
    "os.setxattr": (0,),
    "os.removexattr": (0,),
}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
# bound early: a program rebinding the modules' names cannot break reporting
_write, _dumps = os.write, json.dumps


class _Timeout(BaseException):
    """Raised by the per-test alarm; a BaseException so that ``except Exception`` does not swallow it."""


def _on_alarm(signum: int, frame: object) -> None:
    raise _Timeout


def classify(error: BaseException) -> str:
    """The outcome class of an exception that ended a test."""
    if isinstance(error, _Timeout):
        return "timeout"
    if isinstance(error, MemoryError):
        return "memory"
    if isinstance(error, AssertionError):
        return "fail"
    if isinstance(error, OSError):
        if type(error).__name__ in ("gaierror", "herror") or error.errno in NETWORK_ERRNOS:
            return "network"
        if error.errno == errno.ENOMEM:
            return "memory"
        if error.errno == errno.EFBIG:
            return "file_size"
        if isinstance(error, PermissionError) or error.errno in PERMISSION_ERRNOS:
            return "permission"
    return type(error).__name__


def _run(code: object, namespace: dict, seconds: float, as_main: bool) -> str:
    """Execute compiled code under the alarm; its outcome class."""
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        exec(code, namespace)
        outcome = "pass"
    except SystemExit as error:  # a script may end itself; a function under test may not
        outcome = "pass" if as_main and error.code in (None, 0) else classify(error)
    except BaseException as error:
        outcome = classify(error)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if os.getpid() != MAIN_PID:  # a process the program forked: leave without reporting
            os._exit(0)
    return outcome


def run_guarded(code: object, namespace: dict, seconds: float, as_main: bool = False) -> str:
    """`_run`, also when the alarm fires while the outcome is being classified."""
    try:
        return _run(code, namespace, seconds, as_main)
    except _Timeout:
        return "timeout"


def _inside(path: object, workdir: str) -> bool:
    """Whether a path argument of an audit event lies in the working directory (or is a descriptor)."""
    if isinstance(path, int) or path is None:
        return True
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    resolved = os.path.realpath(os.fspath(path))
    return resolved in (workdir, "/dev/null") or resolved.startswith(workdir + os.sep)


def _install_audit_hooks(block_network: bool, block_writes: bool) -> None:
    """Stand-ins for the namespaces: deny sockets, spawning, native code and writes outside the cwd."""
    workdir = str(Path.cwd().resolve())

    def hook(event: str, args: tuple) -> None:
        if block_network and event in NETWORK_EVENTS:
            raise OSError(errno.ENETUNREACH, "network access is disabled in this sandbox")
        if (
            event in SPAWN_EVENTS
            or event in NATIVE_EVENTS
            or (event == "import" and args[0] in BLOCKED_IMPORTS)
        ):
            raise PermissionError(errno.EPERM, f"{event} is disabled in this sandbox")
        if not block_writes:
            return
        if event == "open" and args[2] & WRITE_FLAGS and not _inside(args[0], workdir):
            raise PermissionError(errno.EACCES, "writing outside the working directory is disabled")
        if event in WRITE_EVENTS and not all(_inside(args[i], workdir) for i in WRITE_EVENTS[event]):
            raise PermissionError(errno.EACCES, "writing outside the working directory is disabled")

    sys.addaudithook(hook)


def _compile(source: str, name: str) -> object | None:
    try:
        return compile(source, name, "exec")
    except (SyntaxError, ValueError):  # ValueError: null bytes in the source
        return None


def run_job(job: dict, report: int) -> None:
    """Run the program, then each test in its namespace (or the program as a script on stdin)."""

    def emit(record: dict) -> None:
        _write(report, (_dumps(record) + "\n").encode())

    seconds = job["timeout_s"]
    as_main = job["mode"] == "stdin"
    count = 1 if as_main else len(job["tests"])
    program = _compile(job["program"], "<program>")
    if program is None:
        for index in range(count):
            emit({"test": index, "outcome": "syntax_error"})
        return
    tests = [] if as_main else [_compile(source, f"<test {i}>") for i, source in enumerate(job["tests"])]
    namespace = {"__name__": "__main__" if as_main else "__solution__"}
    emit({"running": "program"})
    outcome = run_guarded(program, namespace, seconds, as_main)
    if as_main:
        try:
            sys.stdout.flush()
        except BaseException as error:
            outcome = classify(error) if outcome == "pass" else outcome
    if as_main or outcome != "pass":
        for index in range(count):
            emit({"test": index, "outcome": outcome})
        return
    for index, test in enumerate(tests):
        if test is None:
            emit({"test": index, "outcome": "invalid_test"})
            continue
        emit({"running": index})
        emit({"test": index, "outcome": run_guarded(test, namespace, seconds)})


def main() -> None:
    job_fd, report = int(sys.argv[1]), int(sys.argv[2])
    isolation = json.loads(sys.argv[3])
    with os.fdopen(job_fd, "rb") as handle:
        job = json.loads(handle.read())
    signal.signal(signal.SIGALRM, _on_alarm)
    block_network = isolation["network"] != "namespace"
    block_writes = isolation["filesystem"] != "read-only-mounts"
    if block_network or block_writes:
        _install_audit_hooks(block_network, block_writes)
    run_job(job, report)
    for stream in (sys.stdout, sys.stderr):
        with suppress(BaseException):  # the outcome is already reported
            stream.flush()
    _write(report, b'{"done": true}\n')
    os._exit(0)  # skips the program's atexit handlers and never waits for its threads


if __name__ == "__main__":
    main()
