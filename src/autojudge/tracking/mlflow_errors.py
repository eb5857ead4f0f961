"""MLflow's errors as one line for the user: "not found" (a missing model, version or alias) apart from the
rest (server unreachable, permission denied), which must not read as "nothing registered"."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from autojudge.errors import AutoJudgeError, InputError, TrackingError

if TYPE_CHECKING:
    from mlflow.exceptions import MlflowException

# MLflow's codes for a missing registered model or version (RESOURCE_DOES_NOT_EXIST) and for an unknown
# alias (INVALID_PARAMETER_VALUE, "Registered model alias production not found."), locally and from a server
NOT_FOUND = frozenset({"RESOURCE_DOES_NOT_EXIST", "INVALID_PARAMETER_VALUE"})


def is_not_found(error: MlflowException) -> bool:
    return error.error_code in NOT_FOUND


def user_error(error: MlflowException, context: str) -> AutoJudgeError:
    """``error`` as one line after ``context`` with MLflow's message: an InputError when MLflow found
    nothing, else a TrackingError."""
    kind = InputError if is_not_found(error) else TrackingError
    return kind(f"{context}: {error.message}")


@contextmanager
def mlflow_errors(context: str) -> Iterator[None]:
    """MLflow errors raised in the block as ``user_error``s, raised from them (so a flow still sees that an
    unreachable server is a transient error)."""
    from mlflow.exceptions import MlflowException

    try:
        yield
    except MlflowException as error:
        raise user_error(error, context) from error
