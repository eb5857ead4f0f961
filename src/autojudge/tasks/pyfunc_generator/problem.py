"""A generated pyfunc problem, and the draft a family returns for it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class CodeProblem:
    """A generated problem: description, signature, assert tests and canonical solution body."""

    id: str
    family: str
    description: str
    entry_point: str
    params: tuple[str, ...]
    tests: tuple[str, ...]
    solution: str  # continues the signature line: "\n    ...body..."

    @property
    def signature(self) -> str:
        return f"def {self.entry_point}({', '.join(self.params)}):"

    @property
    def prompt(self) -> str:
        return f"{self.description}\n{self.signature}"

    @property
    def program(self) -> str:
        return self.signature + self.solution


@dataclass(frozen=True)
class Draft:
    """What a family draws: the problem's text, its reference function, inputs and solution lines."""

    description: str
    entry_point: str
    params: tuple[str, ...]
    reference: Callable[..., object]
    cases: list[tuple]
    body: list[str]
