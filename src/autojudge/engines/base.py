"""The one interface every generation engine offers to mining: greedy continuations of many prefixes."""

from __future__ import annotations

from typing import Protocol


class GenerationEngine(Protocol):
    """Greedy (or seeded Gumbel-max) continuations of token-id prefixes, all in one call."""

    name: str

    def continue_prefixes(self, prefixes: list[list[int]], max_new_tokens: list[int]) -> list[list[int]]:
        """For each prefix, the generated token ids (at most its ``max_new_tokens``; a final EOS included)."""
        ...

    def close(self) -> None:
        """Release processes and memory held by the engine."""
        ...
