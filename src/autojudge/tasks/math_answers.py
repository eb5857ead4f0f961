"""Final-answer extraction and equivalence for math tasks, backed by math-verify."""

from __future__ import annotations

import logging
import re
from functools import lru_cache

from math_verify import parse, verify

# we call math-verify without its signal-based timeouts (they break in threads); silence its notice
logging.getLogger("math_verify").setLevel(logging.ERROR)

FINAL_ANSWER = re.compile(r"final answer is[:\s]*\$?\s*(.+?)\s*(?:\.\s|\.?$|\n)", re.IGNORECASE)
GSM8K_MARKER = re.compile(r"####\s*(.+?)\s*$", re.MULTILINE)
LAST_NUMBER = re.compile(r"-?\$?\d[\d,]*(?:\.\d+)?")


def extract_final_answer(response: str) -> str | None:
    """The text after the last "The final answer is", else after "####", else the last number."""
    for pattern in (FINAL_ANSWER, GSM8K_MARKER):
        matches = pattern.findall(response)
        if matches:
            return matches[-1].strip()
    numbers = LAST_NUMBER.findall(response)
    return numbers[-1] if numbers else None


@lru_cache(maxsize=65536)
def _parsed(answer: str) -> tuple:
    return tuple(parse(answer, parsing_timeout=None))


def answers_equivalent(first: str | None, second: str | None) -> bool:
    """Mathematical equivalence of two extracted answers (1.5 == 3/2 == "1.50", "$1,000" == 1000).

    A missing answer is equivalent to nothing, not even another missing answer.
    """
    if first is None or second is None:
        return False
    if first.strip() == second.strip():
        return True
    parsed_first, parsed_second = _parsed(first), _parsed(second)
    if not parsed_first or not parsed_second:
        return False
    return verify(list(parsed_first), list(parsed_second), timeout_seconds=None)
