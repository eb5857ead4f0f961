"""The interface every task implements: prompts, answer extraction, equivalence and scoring."""

from __future__ import annotations

import zlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from autojudge.errors import InputError
from autojudge.tasks.jsonl import read_jsonl


def named_seed(seed: int, name: str) -> int:
    """A seed for the stream called ``name`` (a split, a corpus source): changing one stream leaves the others."""
    return seed * 1_000_003 + zlib.crc32(name.encode())


@dataclass(frozen=True)
class Example:
    """One problem of a task: the question and its reference final answer."""

    id: str
    question: str
    answer: str
    solution: str = ""


class Task(ABC):
    """A task reads its splits from ``data_dir/<split>.jsonl`` and judges responses."""

    name: ClassVar[str]
    required_fields: ClassVar[Mapping[str, type | tuple[type, ...]]]

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)

    def split_path(self, split: str) -> Path:
        return self.data_dir / f"{split}.jsonl"

    def load_split(self, split: str, limit: int | None = None) -> list[Example]:
        """Examples of one split, validated; ``limit`` keeps the first ones."""
        path = self.split_path(split)
        rows = read_jsonl(path, self.required_fields)
        count = len(rows) if limit is None else min(limit, len(rows))
        examples = [self.example_from_row(rows[i], split, i) for i in range(count)]
        if not examples:
            raise InputError(f"split {split!r} of task {self.name!r} has no examples: {path}")
        return examples

    @abstractmethod
    def example_from_row(self, row: Mapping[str, Any], split: str, index: int) -> Example:
        """Turn one validated data row into an `Example`."""

    @abstractmethod
    def build_prompt(self, example: Example) -> str:
        """The text the model continues to answer ``example``."""

    @abstractmethod
    def extract_answer(self, response: str) -> str | None:
        """The final answer stated in a model response, or None if there is none."""

    @abstractmethod
    def equivalent(self, first: str | None, second: str | None) -> bool:
        """Whether two extracted answers mean the same for this task."""

    def extract_answer_for(self, response: str, example: Example) -> str | None:
        """The answer ``response`` gives to ``example``; code tasks need the example (its tests) for it."""
        return self.extract_answer(response)

    def extract_answers(self, responses: Sequence[str], examples: Sequence[Example]) -> list[str | None]:
        """`extract_answer_for` over many responses at once (code tasks run their programs concurrently)."""
        return [self.extract_answer_for(r, e) for r, e in zip(responses, examples, strict=True)]

    def score(self, response: str, example: Example) -> bool:
        """Whether ``response`` answers ``example`` correctly."""
        return self.equivalent(self.extract_answer_for(response, example), example.answer)

    def scores(self, responses: Sequence[str], examples: Sequence[Example]) -> list[bool]:
        """`score` over many responses at once."""
        answers = self.extract_answers(responses, examples)
        return [self.equivalent(a, e.answer) for a, e in zip(answers, examples, strict=True)]
