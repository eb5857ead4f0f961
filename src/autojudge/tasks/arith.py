"""The toy task: arithmetic word problems with chain-of-thought solutions (see arith_generator)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from autojudge.tasks.arith_generator import STYLES, generate_split
from autojudge.tasks.base import Example, Task, named_seed
from autojudge.tasks.jsonl import write_jsonl
from autojudge.tasks.math_answers import answers_equivalent, extract_final_answer


def arith_prompt(question: str) -> str:
    """The prompt format the toy models are trained on."""
    return f"Question: {question}\nAnswer:"


class ArithTask(Task):
    name = "arith"
    required_fields: ClassVar[Mapping[str, type]] = {
        "id": str,
        "question": str,
        "solution": str,
        "answer": int,
    }

    def example_from_row(self, row: Mapping[str, Any], split: str, index: int) -> Example:
        return Example(
            id=row["id"], question=row["question"], answer=str(row["answer"]), solution=row["solution"]
        )

    def build_prompt(self, example: Example) -> str:
        return arith_prompt(example.question)

    def extract_answer(self, response: str) -> str | None:
        return extract_final_answer(response)

    def equivalent(self, first: str | None, second: str | None) -> bool:
        return answers_equivalent(first, second)


def arith_split_rows(split: str, size: int, seed: int) -> list[dict]:
    """The data rows of one split: ``shifted``, ``variant``, ``unseen`` and ``<style>_<name>`` (e.g.
    ``variant_validation``) use their styles, every other split the standard one.

    The split's seed mixes ``seed`` with its name, so that changing one split leaves the others unchanged.
    """
    style = split.split("_")[0] if split.split("_")[0] in STYLES else "standard"
    problems = generate_split(size, seed=named_seed(seed, split), style=style, prefix=split)
    return [
        {"id": p.id, "question": p.question, "solution": p.solution, "answer": p.answer} for p in problems
    ]


def write_arith_splits(data_dir: Path, sizes: Mapping[str, int], seed: int) -> dict[str, Path]:
    """Generate every split into ``data_dir`` as JSON Lines; returns the paths."""
    paths = {}
    for split, size in sizes.items():
        paths[split] = data_dir / f"{split}.jsonl"
        write_jsonl(paths[split], arith_split_rows(split, size, seed))
    return paths
