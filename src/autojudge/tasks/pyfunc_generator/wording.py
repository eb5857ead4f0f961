"""The solution's wording, drawn from its own random stream: names, operand orders, forms, comments."""

from __future__ import annotations

import random
from collections.abc import Sequence

INDENT = "    "
ELEMENT_NAMES = ("x", "n", "v", "item", "value", "num")
ACCUMULATOR_NAMES = ("total", "result", "acc", "out", "answer")
COUNTER_NAMES = ("count", "total", "result", "counter")
RESULT_NAMES = ("result", "answer", "out", "res")
CHAR_NAMES = ("ch", "c", "letter", "char")
COMMENTS = ("# compute the result", "# solution", "# straightforward", "# done in one pass")


class Style:
    """Lexical choices, drawn from their own random stream: names, operand orders, forms."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.taken: set[str] = set()

    def name(self, choices: Sequence[str]) -> str:
        """A variable name not used yet in this solution (the name lists never overlap parameter names)."""
        name = self.rng.choice([c for c in choices if c not in self.taken])
        self.taken.add(name)
        return name

    def pick(self, options: Sequence[str]) -> str:
        return self.rng.choice(list(options))

    def order(self, left: str, right: str) -> tuple[str, str]:
        """The two operands of a commutative operation, in either order."""
        return (left, right) if self.rng.random() < 0.5 else (right, left)

    def commute(self, left: str, right: str, op: str) -> str:
        """``left op right`` or ``right op left`` for a commutative operator."""
        first, second = self.order(left, right)
        return f"{first} {op} {second}"

    def returning(self, expression: str) -> list[str]:
        """``return expression``, or through an intermediate variable."""
        if self.rng.random() < 0.5:
            return [f"return {expression}"]
        name = self.name(RESULT_NAMES)
        return [f"{name} = {expression}", f"return {name}"]


def loop(lst: str, element: str, inner: list[str]) -> list[str]:
    """A ``for`` loop over ``lst`` with ``inner`` as its body."""
    return [f"for {element} in {lst}:", *[INDENT + line for line in inner]]
