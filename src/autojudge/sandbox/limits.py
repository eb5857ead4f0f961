"""Resource limits of one sandboxed run and the user it runs as."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

NOBODY_UID = 65534  # the conventional unprivileged "nobody" user and group


@dataclass(frozen=True)
class SandboxLimits:
    """Per-run limits; wall-clock and CPU budgets grow with the number of tests in a run."""

    timeout_s: float = 3.0  # wall clock per test and for the program itself (the harness's alarm)
    startup_s: float = 2.0  # interpreter start-up allowance on top of the tests' budget
    memory_mb: int = 1024  # RLIMIT_AS: address space of each sandboxed process
    file_size_mb: int = 16  # RLIMIT_FSIZE: largest file a program may write, its stdout included
    processes: int = 64  # RLIMIT_NPROC allowance: processes the sandbox user may have at once
    open_files: int = 128  # RLIMIT_NOFILE
    output_bytes: int = 1 << 20  # stdout/stderr bytes read back into the result

    def wall_s(self, tests: int) -> float:
        """Wall-clock deadline of a run with ``tests`` tests."""
        return self.startup_s + self.timeout_s * (tests + 1)

    def cpu_s(self, tests: int) -> int:
        """RLIMIT_CPU of a run with ``tests`` tests (a backstop behind the wall clock)."""
        return math.ceil(self.wall_s(tests)) + 1

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)
