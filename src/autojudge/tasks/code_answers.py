"""Answers of code tasks: the test report of the program a response contains.

The answer extracted from a response is the program's test report, one outcome class per test
(``pass``, ``fail``, ``syntax_error``, an exception type name, ``timeout``, ``memory``, ...; see
`autojudge.sandbox.outcomes`), as a canonical JSON string such as ``{"tests":["pass","fail"]}``.
Two answers are equivalent when their reports are identical, and a response is correct (pass@1)
when every test passes. Programs run in the sandbox; identical (program, tests) pairs run once.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from autojudge.io import write_text
from autojudge.sandbox import SandboxJob, SandboxPool
from autojudge.sandbox.outcomes import PASS
from autojudge.tasks.base import Example, Task

CACHE_VERSION = 1  # bump when the harness's classification changes, so disk caches do not mix versions
# a fenced block: ```python / ```py / ``` ... up to the closing fence (or the end of a cut-off response)
FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
PYTHON_LABELS = {"python", "python3", "py"}


@dataclass(frozen=True)
class CodeExample(Example):
    """A code problem: the code a response continues, and tests (Python snippets, or stdin/stdout pairs)."""

    code_prefix: str = ""  # the code the model continues: a signature, or HumanEval's whole prompt
    tests: tuple[str, ...] = ()  # run after the program in its namespace; an AssertionError fails
    stdio_tests: tuple[tuple[str, str], ...] = ()  # (stdin, expected stdout): the program runs as a script
    entry_point: str = ""

    @property
    def test_count(self) -> int:
        return len(self.tests) + len(self.stdio_tests)


def report_json(outcomes: Sequence[str]) -> str:
    """The canonical JSON string of a test report."""
    return json.dumps({"tests": list(outcomes)}, separators=(",", ":"))


def all_pass_report(count: int) -> str:
    """The report of a program that passes all ``count`` tests (a code example's reference answer)."""
    return report_json([PASS] * count)


def report_outcomes(report: str) -> list[str]:
    """The outcome classes of a report string."""
    return list(json.loads(report)["tests"])


def report_passed(report: str | None) -> bool:
    """pass@1: whether every test passed."""
    return report is not None and all(outcome == PASS for outcome in report_outcomes(report))


def _import_lines(code: str) -> str:
    return "".join(line + "\n" for line in code.splitlines() if line.startswith(("import ", "from ")))


def extract_program(response: str, code_prefix: str = "") -> str:
    """The program in a response: its first ```python fenced block, else the prefix it continues.

    A fenced block is taken as a whole program (the prefix's import lines are put before it). Without
    one, the response continues ``code_prefix`` (a signature, or a prompt ending in a docstring) and
    ends before its first non-indented line, as HumanEval's stop sequences do, so trailing test code,
    ``if __name__ == "__main__":`` blocks or chatter are not run (nor helper functions after it).
    Without a prefix, an unfenced response is the program as it stands.
    """
    blocks = FENCE.findall(response)
    if blocks:
        labelled = [code for label, code in blocks if label.lower() in PYTHON_LABELS]
        unlabelled = [code for label, code in blocks if not label]
        chosen = (labelled or unlabelled or [blocks[0][1]])[0]
        return _import_lines(code_prefix) + chosen
    if not code_prefix.strip():
        return response
    kept = []
    for index, line in enumerate(response.split("\n")):
        continues_prefix_line = index == 0 and not code_prefix.endswith("\n")
        if not continues_prefix_line and line[:1] not in ("", " ", "\t"):
            break
        kept.append(line)
    return code_prefix + "\n".join(kept)


def _jobs(program: str, example: CodeExample) -> list[SandboxJob]:
    jobs = [SandboxJob(program, example.tests)] if example.tests else []
    jobs += [SandboxJob(program, stdin=i, expected_stdout=o) for i, o in example.stdio_tests]
    return jobs


class CodeRunner:
    """Runs programs against examples' tests through a sandbox pool, caching reports by content hash.

    The cache key is the sha256 of the program, the tests and the sandbox limits; reports live in
    memory and, with ``cache_dir``, in one small JSON file per key (shared across processes).
    """

    def __init__(self, pool: SandboxPool | None = None, cache_dir: Path | None = None) -> None:
        self._pool = pool
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._cache: dict[str, str] = {}
        self._lock = threading.Lock()
        self.runs = 0  # sandboxed runs started, for tests and logs

    @property
    def pool(self) -> SandboxPool:
        with self._lock:
            if self._pool is None:
                self._pool = SandboxPool()
            return self._pool

    def key(self, program: str, example: CodeExample) -> str:
        """The content hash of a (program, tests) pair under this runner's limits."""
        content = {
            "version": CACHE_VERSION,
            "program": program,
            "tests": list(example.tests),
            "stdio": [list(pair) for pair in example.stdio_tests],
            "limits": self.pool.sandbox.limits.as_dict(),
        }
        return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()

    def _cached(self, key: str) -> str | None:
        if key in self._cache:
            return self._cache[key]
        if self.cache_dir is not None:
            path = self.cache_dir / key[:2] / f"{key}.json"
            if path.is_file():
                self._cache[key] = path.read_text(encoding="utf-8")
                return self._cache[key]
        return None

    def _store(self, key: str, report: str) -> None:
        self._cache[key] = report
        if self.cache_dir is not None:
            write_text(self.cache_dir / key[:2] / f"{key}.json", report)

    def reports(self, programs: Sequence[str], examples: Sequence[CodeExample]) -> list[str]:
        """The test report of each program on its example's tests, running all new pairs at once."""
        keys = [self.key(p, e) for p, e in zip(programs, examples, strict=True)]
        pending: dict[str, tuple[str, CodeExample]] = {}
        for key, program, example in zip(keys, programs, examples, strict=True):
            if key not in pending and self._cached(key) is None:
                pending[key] = (program, example)
        jobs, owners = [], []
        for key, (program, example) in pending.items():
            for job in _jobs(program, example):
                jobs.append(job)
                owners.append(key)
        results = self.pool.run(jobs)
        self.runs += len(jobs)
        outcomes: dict[str, list[str]] = {key: [] for key in pending}
        for key, result in zip(owners, results, strict=True):
            outcomes[key].extend(result.outcomes)
        for key, found in outcomes.items():
            self._store(key, report_json(found))
        return [self._cache[key] for key in keys]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()


class CodeTask(Task):
    """A task whose answers are test reports: `extract_answer_for` needs the example and its tests."""

    def __init__(self, data_dir: Path, runner: CodeRunner | None = None) -> None:
        super().__init__(data_dir)
        self._runner = runner

    @property
    def runner(self) -> CodeRunner:
        if self._runner is None:
            self._runner = CodeRunner()
        return self._runner

    def build_prompt(self, example: Example) -> str:
        return example.question

    def program(self, response: str, example: CodeExample) -> str:
        """The program a response gives for ``example``."""
        return extract_program(response, example.code_prefix)

    def extract_answer(self, response: str) -> str | None:
        raise TypeError(
            f"task {self.name!r}: a code answer is a test report and needs the example's tests; "
            "use extract_answer_for(response, example) or extract_answers(responses, examples)"
        )

    def extract_answer_for(self, response: str, example: Example) -> str | None:
        return self.extract_answers([response], [example])[0]

    def extract_answers(self, responses: Sequence[str], examples: Sequence[Example]) -> list[str | None]:
        code_examples = [_as_code_example(e) for e in examples]
        programs = [self.program(r, e) for r, e in zip(responses, code_examples, strict=True)]
        return list(self.runner.reports(programs, code_examples))

    def equivalent(self, first: str | None, second: str | None) -> bool:
        return first is not None and first == second

    def reference_report(self, examples: Sequence[CodeExample]) -> list[str]:
        """Reports of the examples' reference solutions (``example.solution`` as a response)."""
        return self.extract_answers([e.solution for e in examples], examples)  # type: ignore[return-value]


def _as_code_example(example: Example) -> CodeExample:
    if not isinstance(example, CodeExample):
        raise TypeError(f"code tasks judge CodeExample objects, got {type(example).__name__}")
    return example
