"""GSM8K in its standard JSON Lines format: {"question": ..., "answer": "... #### N"}."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from autojudge.errors import InputError
from autojudge.tasks.base import Example, Task
from autojudge.tasks.math_answers import GSM8K_MARKER, answers_equivalent, extract_final_answer

ZERO_SHOT_PROMPT = (
    "Given the following problem, reason and give a final answer to the problem.\n"
    "Problem: {question}\n"
    'Your response should end with "The final answer is [answer]" where [answer] is the response to the problem.'
)


class Gsm8kTask(Task):
    name = "gsm8k"
    required_fields: ClassVar[Mapping[str, type]] = {"question": str, "answer": str}

    def example_from_row(self, row: Mapping[str, Any], split: str, index: int) -> Example:
        marker = GSM8K_MARKER.search(row["answer"])
        if marker is None:
            raise InputError(f"{self.split_path(split)}:{index + 1}: answer has no '#### <number>' line")
        solution = row["answer"][: marker.start()].strip()
        return Example(
            id=f"gsm8k-{split}-{index}", question=row["question"], answer=marker.group(1), solution=solution
        )

    def build_prompt(self, example: Example) -> str:
        return ZERO_SHOT_PROMPT.format(question=example.question)

    def extract_answer(self, response: str) -> str | None:
        return extract_final_answer(response)

    def equivalent(self, first: str | None, second: str | None) -> bool:
        return answers_equivalent(first, second)
