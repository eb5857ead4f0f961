"""Run many sandbox jobs at once, so that mining and scoring are not serialized on test runs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType

from autojudge.sandbox.runner import RunResult, Sandbox, SandboxJob


class SandboxPool:
    """A thread pool whose threads each drive one sandboxed run (separate processes) at a time."""

    def __init__(self, sandbox: Sandbox | None = None, workers: int | None = None) -> None:
        self.sandbox = sandbox or Sandbox()
        self.workers = workers or max(2, os.cpu_count() or 1)
        self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="sandbox")

    def run(self, jobs: Sequence[SandboxJob]) -> list[RunResult]:
        """The result of every job, in the order of ``jobs``."""
        if not jobs:
            return []
        self.sandbox.interpreter  # noqa: B018 - find the interpreter once, before the threads race for it
        return list(self._executor.map(self.sandbox.run, jobs))

    def close(self) -> None:
        self._executor.shutdown(wait=True)

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
