"""The toy code task: small function-synthesis problems with assert tests (see pyfunc_generator)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from autojudge.errors import InputError
from autojudge.tasks.base import named_seed
from autojudge.tasks.code_answers import CodeExample, CodeTask, all_pass_report
from autojudge.tasks.jsonl import write_jsonl
from autojudge.tasks.pyfunc_generator.splits import generate_split


def signature_of(prompt: str) -> str:
    """The code part of a pyfunc prompt: from its ``def`` line on (the description comes before)."""
    start = prompt.find("def ")
    return prompt[start:] if start >= 0 else ""


class PyFuncTask(CodeTask):
    """Answers are test reports of the function the response completes; correct means pass@1."""

    name = "pyfunc"
    required_fields: ClassVar[Mapping[str, type]] = {
        "id": str,
        "prompt": str,
        "tests": list,
        "entry_point": str,
        "solution": str,
    }

    def example_from_row(self, row: Mapping[str, Any], split: str, index: int) -> CodeExample:
        tests = tuple(row["tests"])
        code_prefix = signature_of(row["prompt"])
        if not code_prefix or not tests or not all(isinstance(t, str) for t in tests):
            raise InputError(f"{self.split_path(split)}:{index + 1}: needs a 'def' line and string tests")
        return CodeExample(
            id=row["id"],
            question=row["prompt"],
            answer=all_pass_report(len(tests)),
            solution=row["solution"],
            code_prefix=code_prefix,
            tests=tests,
            entry_point=row["entry_point"],
        )


def pyfunc_split_rows(sizes: Mapping[str, int], seed: int) -> dict[str, list[dict]]:
    """The data rows of every split.

    Each split's seed mixes ``seed`` with the split's name. The prompt space is small (a few thousand
    descriptions and signatures), so held-out splits (all but ``train``) get distinct prompts, none of
    which appears in ``train``: a test problem is never a training problem with other tests.
    """
    rows: dict[str, list[dict]] = {}
    held_out: set[str] = set()
    for split in sorted(sizes, key=lambda name: name == "train"):  # held-out splits first
        problems = generate_split(
            sizes[split],
            named_seed(seed, split),
            f"pyfunc-{split}",
            frozenset(held_out),
            unique=split != "train",
        )
        if split != "train":
            held_out.update(p.prompt for p in problems)
        rows[split] = [
            {
                "id": p.id,
                "prompt": p.prompt,
                "tests": list(p.tests),
                "entry_point": p.entry_point,
                "solution": p.solution,
                "family": p.family,
            }
            for p in problems
        ]
    return {split: rows[split] for split in sizes}


def write_pyfunc_splits(data_dir: Path, sizes: Mapping[str, int], seed: int) -> dict[str, Path]:
    """Generate every split into ``data_dir`` as JSON Lines; returns the paths."""
    paths = {}
    for split, rows in pyfunc_split_rows(sizes, seed).items():
        paths[split] = Path(data_dir) / f"{split}.jsonl"
        write_jsonl(paths[split], rows)
    return paths
