"""Outcome classes of a sandboxed test, and the class of a run that died before reporting.

A test's outcome is one of the constants below or, for any other exception, the exception's
type name (e.g. "ZeroDivisionError"). The harness (a stand-alone script) spells the same names.
"""

from __future__ import annotations

import signal

PASS = "pass"
FAIL = "fail"  # an assertion failed, or a stdin/stdout test printed something else
SYNTAX_ERROR = "syntax_error"  # the program does not compile
TIMEOUT = "timeout"  # the wall-clock or CPU budget ran out
MEMORY = "memory"  # MemoryError, ENOMEM, i.e. RLIMIT_AS was hit
NETWORK = "network"  # a socket operation failed because there is no network
PERMISSION = "permission"  # a write outside the working directory, or another denied operation
FILE_SIZE = "file_size"  # RLIMIT_FSIZE was hit (a file or the output grew too large)
CRASH = "crash"  # the interpreter died from a signal (e.g. a segmentation fault)
EXITED = "exited"  # the program ended the process (os._exit) before its tests ran
KILLED = "killed"  # killed by a signal the sandbox did not send (e.g. the kernel's OOM killer)
NOT_RUN = "not_run"  # an earlier test took the whole process down
INVALID_TEST = "invalid_test"  # the test code itself does not compile (a task bug)

CPU_SIGNALS = {signal.SIGXCPU}
CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE}


def outcome_of_death(signal_number: int | None, exit_code: int | None, stderr: str) -> str:
    """The outcome of a test whose process ended before the harness reported it."""
    if "MemoryError" in stderr or "Cannot allocate memory" in stderr:
        return MEMORY
    if signal_number is None:
        return EXITED if exit_code is not None else KILLED
    if signal_number in CPU_SIGNALS:
        return TIMEOUT
    if signal_number == signal.SIGXFSZ:
        return FILE_SIZE
    if signal_number in CRASH_SIGNALS:
        return CRASH
    return KILLED
