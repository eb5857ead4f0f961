"""Pydantic's validation errors of params as one line each: the key, what is wrong and, for a field, its value.

An error raised by a model's own check (a section's or the root's) has the model as its location, empty at
the root; its message names the keys itself, so only a section that it does not name is put before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

VALUE_SHOWN = 60  # characters of a bad value's repr in a message
MODEL_CHECKS = ("value_error", "assertion_error")  # raised by a validator: the message names the value
NO_VALUE = ("missing", "extra_forbidden")  # the key itself is the problem


def issue_line(issue: Mapping[str, Any]) -> str:
    """One pydantic issue as ``key: message[, got value]``."""
    key = ".".join(str(part) for part in issue["loc"])
    message = issue["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    value = issue.get("input")
    if issue["type"] not in (*MODEL_CHECKS, *NO_VALUE) and not isinstance(value, Mapping):
        shown = repr(value)
        message += f", got {shown if len(shown) <= VALUE_SHOWN else shown[: VALUE_SHOWN - 3] + '...'}"
    if not key or message.startswith((f"{key}.", f"{key} ", f"{key}:")):
        return message
    return f"{key}: {message}"


def error_line(error: ValidationError) -> str:
    """Every issue of ``error``, one line."""
    return "; ".join(issue_line(issue) for issue in error.errors())
