"""Which errors are transient: worth retrying because the same call may succeed a little later (a network
error, a server that is down or overloaded), told by the error's type. Anything else (a bug, bad input)
fails at once: retrying it would fail the same way.

A stage runs in its own process, so its error reaches the orchestrator as an exit status: the stage script
exits with ``TRANSIENT_EXIT`` after a transient error (``autojudge.orchestration.stage``), and
``StageError.transient`` reads it back.
"""

from __future__ import annotations

import errno
import sys
import urllib.error
from collections.abc import Iterator

from autojudge.orchestration.dvc_stages import StageError

TRANSIENT_ERRNOS = frozenset(
    {errno.ECONNREFUSED, errno.ECONNRESET, errno.ETIMEDOUT, errno.EHOSTUNREACH, errno.ENETUNREACH}
)
# HTTP statuses: request timeout, too many requests, server errors (the ones MLflow's client retries)
TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
# MLflow's codes for a server that is unavailable (503), timed out (504) or rate-limited (429)
MLFLOW_TRANSIENT_CODES = frozenset({"TEMPORARILY_UNAVAILABLE", "DEADLINE_EXCEEDED", "REQUEST_LIMIT_EXCEEDED"})


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` is transient: a failed stage whose exit status says so, or an error that is (or was
    raised from, or while handling) a transient one by type. MLflow, for one, wraps an unreachable server's
    ``requests.ConnectionError`` in a plain ``MlflowException``."""
    if isinstance(error, StageError):
        return error.transient
    return any(_transient_by_type(link) for link in _chain(error))


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    """``error`` and the errors it was raised from or while handling (unless ``from None`` hid them)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or (None if error.__suppress_context__ else error.__context__)


def _transient_by_type(error: BaseException) -> bool:
    if isinstance(error, urllib.error.HTTPError):  # an URLError and an OSError too: the status decides
        return error.code in TRANSIENT_STATUS
    if isinstance(error, urllib.error.URLError):  # a socket's error (refused, timed out, no route, DNS)
        return isinstance(error.reason, OSError)  # or a malformed URL (a string reason)
    if isinstance(error, ConnectionError | TimeoutError):
        return True
    if isinstance(error, OSError) and error.errno in TRANSIENT_ERRNOS:
        return True
    return _transient_client_error(error)


def _loaded(module: str, *names: str) -> tuple[type, ...]:
    """Classes of a library if it is imported: if it is not, no error of its types can exist (and importing
    MLflow just to look takes seconds)."""
    found = sys.modules.get(module)
    return tuple(getattr(found, name) for name in names) if found else ()


def _transient_client_error(error: BaseException) -> bool:
    """The HTTP clients of MLflow (requests) and of the Prefect API (httpx): network errors, retries used
    up on server errors, and server-error statuses."""
    if isinstance(error, _loaded("requests.exceptions", "ConnectionError", "Timeout", "RetryError")):
        return True
    if isinstance(error, _loaded("httpx", "TimeoutException", "NetworkError", "RemoteProtocolError")):
        return True
    if isinstance(error, _loaded("requests.exceptions", "HTTPError") + _loaded("httpx", "HTTPStatusError")):
        return getattr(error.response, "status_code", None) in TRANSIENT_STATUS
    if isinstance(error, _loaded("mlflow.exceptions", "MlflowException")):
        return error.error_code in MLFLOW_TRANSIENT_CODES
    return False
