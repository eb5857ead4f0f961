"""Which failures the flow retries: transient ones by type (network errors, servers unavailable, a stage
that says so or was killed from outside); a bug or bad input fails at once."""

from __future__ import annotations

import errno
import urllib.error

import httpx
import pytest
import requests
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import (
    INTERNAL_ERROR,
    PERMISSION_DENIED,
    RESOURCE_DOES_NOT_EXIST,
    TEMPORARILY_UNAVAILABLE,
)

from autojudge.errors import InputError, TrackingError
from autojudge.orchestration.dvc_stages import StageError
from autojudge.orchestration.transient import is_transient

URL = "http://127.0.0.1:5000/api/2.0/mlflow/registered-models/get"


def http_status(status: int) -> httpx.HTTPStatusError:
    request = httpx.Request("GET", URL)
    return httpx.HTTPStatusError("status", request=request, response=httpx.Response(status, request=request))


def requests_status(status: int) -> requests.HTTPError:
    response = requests.Response()
    response.status_code = status
    return requests.HTTPError("status", response=response)


def raised_while_handling(cause: Exception, error: Exception, hide: bool = False) -> Exception:
    """``error`` raised in an ``except`` block for ``cause`` (as MLflow wraps its HTTP client's errors)."""
    try:
        try:
            raise cause
        except Exception:
            if hide:
                raise error from None
            raise error  # noqa: B904 - the implicit context is what is tested
    except Exception as raised:
        return raised


def unreachable_mlflow() -> Exception:
    """What MLflow raises when nothing listens at its tracking URI: a plain MlflowException (INTERNAL_ERROR)
    raised while handling requests' ConnectionError; and the one line the registry makes of it."""
    return raised_while_handling(
        requests.ConnectionError("Max retries exceeded (Connection refused)"),
        MlflowException(f"API request to {URL} failed with exception ..."),
    )


def dvc_repro_failure(status: int) -> StageError:
    tail = [
        f"ERROR: failed to reproduce 'mine@0': failed to run: python stages/mine.py, exited with {status}"
    ]
    return StageError("mine@0", "dvc repro --single-item mine@0", 255, tail)


TRANSIENT = {
    "connection refused": ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"),
    "connection reset": ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"),
    "timeout": TimeoutError("timed out"),
    "OSError ETIMEDOUT": OSError(errno.ETIMEDOUT, "Connection timed out"),
    "OSError ECONNREFUSED": OSError(errno.ECONNREFUSED, "Connection refused"),
    "urllib, refused": urllib.error.URLError(ConnectionRefusedError(errno.ECONNREFUSED, "refused")),
    "urllib, HTTP 503": urllib.error.HTTPError(URL, 503, "Service Unavailable", {}, None),
    "requests, connection": requests.ConnectionError("Connection refused"),
    "requests, read timeout": requests.ReadTimeout("read timed out"),
    "requests, retries used up on 503": requests.exceptions.RetryError("too many 503 error responses"),
    "requests, HTTP 502": requests_status(502),
    "httpx (Prefect API), connect": httpx.ConnectError("All connection attempts failed"),
    "httpx (Prefect API), HTTP 503": http_status(503),
    "MLflow, server unavailable": MlflowException("unavailable", error_code=TEMPORARILY_UNAVAILABLE),
    "MLflow, server unreachable": unreachable_mlflow(),
    "registry's one line, server unreachable": raised_while_handling(
        unreachable_mlflow(), TrackingError("cannot promote model m: API request ... failed")
    ),
    "stage exited with TRANSIENT_EXIT": StageError(
        "register", "python stages/register.py", 75, ["stage register: ..."]
    ),
    "stage exited with TRANSIENT_EXIT under dvc repro": dvc_repro_failure(75),
    "stage killed (OOM killer)": StageError("mine@0", "python stages/mine.py", -9, []),
    "stage killed, through a shell": dvc_repro_failure(137),
}

NOT_TRANSIENT = {
    "a bug": ZeroDivisionError("division by zero"),
    "a bug, KeyError": KeyError("threshold"),
    "missing file": FileNotFoundError(errno.ENOENT, "No such file or directory"),
    "permission": PermissionError(errno.EACCES, "Permission denied"),
    "bad input": InputError("params: decoding.window must be positive"),
    "urllib, malformed URL": urllib.error.URLError("unknown url type: htp"),
    "urllib, HTTP 404": urllib.error.HTTPError(URL, 404, "Not Found", {}, None),
    "requests, HTTP 403": requests_status(403),
    "httpx (Prefect API), HTTP 404": http_status(404),
    "httpx, bad URL scheme": httpx.UnsupportedProtocol("Request URL is missing an 'http://' protocol"),
    "MLflow, not found": MlflowException("Registered Model not found", error_code=RESOURCE_DOES_NOT_EXIST),
    "MLflow, permission": MlflowException("no", error_code=PERMISSION_DENIED),
    "MLflow, a plain error": MlflowException("bad signature", error_code=INTERNAL_ERROR),
    "a user error hiding a network error (from None)": raised_while_handling(
        ConnectionRefusedError(), InputError("x"), hide=True
    ),
    "stage, user error": StageError("train", "python stages/train.py", 2, ["stage train: x.json: bad"]),
    "stage, traceback": StageError(
        "train", "python stages/train.py", 1, ["ZeroDivisionError: division by zero"]
    ),
    "stage, bug under dvc repro": dvc_repro_failure(1),
    "dvc itself failed": StageError("train", "dvc commit --force train", 1, ["ERROR: unexpected error"]),
}


@pytest.mark.parametrize("error", TRANSIENT.values(), ids=TRANSIENT.keys())
def test_transient_errors_are_retried(error):
    assert is_transient(error)


@pytest.mark.parametrize("error", NOT_TRANSIENT.values(), ids=NOT_TRANSIENT.keys())
def test_other_errors_fail_at_once(error):
    assert not is_transient(error)
