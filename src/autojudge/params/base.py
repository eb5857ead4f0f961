"""The base of every params section: unknown keys are errors, and a validated section is frozen.

A section reports its reads to the process's params recorder, when one runs (``access``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from autojudge.params import access


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        if access.RECORDER is not None:
            access.RECORDER.read(self, name, value)
        return value

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        if access.RECORDER is not None:
            access.RECORDER.dumped(self)
        return super().model_dump(**kwargs)

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any:
        copy = super().model_copy(update=update, deep=deep)
        if access.RECORDER is not None:
            access.RECORDER.copied(self, copy, update or {})
        return copy
