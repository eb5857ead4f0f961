"""Registering, promoting and rolling back heads in a real MLflow store (SQLite in a temporary folder)."""

import socket

import pytest
import torch

from autojudge.errors import InputError, TrackingError
from autojudge.features.spec import FeatureSpec
from autojudge.heads.artifact import JudgeHead
from autojudge.orchestration.transient import is_transient
from autojudge.registry.promotion import (
    PRODUCTION,
    check_gates,
    promote,
    register_version,
    rollback,
)
from autojudge.registry.runs import log_model_and_card, log_training_run
from autojudge.tracking.heads import resolve_head, version_card
from autojudge.tracking.store import use_tracking

NAME = "autojudge-arith-test"


@pytest.fixture
def store(tmp_path, monkeypatch):
    """An empty local store in the working directory (promoting and rolling back create none)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    use_tracking()
    return tmp_path


def _card(drop, gain):
    return {"evaluation": {"headline": {"accuracy_drop_vs_exact_sd": drop, "mat_gain_vs_exact_sd": gain}}}


def _register(tmp_path, threshold, drop, gain):
    head = JudgeHead(torch.ones(3), 0.0, threshold, FeatureSpec("target", 3, 2), "toy", "arith", "h")
    path = head.save(tmp_path / f"head-{threshold}" / "head.safetensors")
    run_id = log_training_run(NAME, {"train": {"c": 0.1}}, {"validation_auc": 0.9}, [path])
    uri = log_model_and_card(run_id, path, _card(drop, gain), "# card\n", {"eval_mat": gain}, [])
    return register_version(uri, NAME, "# card\n", {"threshold": str(threshold)}, "candidate")


def test_gates():
    assert check_gates(_card(0.005, 1.6), 0.01, 1.2).passed
    result = check_gates(_card(0.03, 1.1), 0.01, 1.2)
    assert not result.passed
    assert "accuracy drop vs exact SD is 3.00 points > budget 1.00" in result.reasons[0]
    assert "MAT gain over exact SD is 1.10x < floor 1.20x" in result.reasons[1]


def test_register_promote_and_roll_back(store):
    first = _register(store, 0.1, drop=0.0, gain=1.5)
    assert version_card(NAME, first)["evaluation"]["headline"]["mat_gain_vs_exact_sd"] == 1.5
    assert promote(NAME, None, 0.01, 1.2) == (first, check_gates(_card(0.0, 1.5), 0.01, 1.2))
    assert resolve_head(f"models:/{NAME}@{PRODUCTION}").threshold == 0.1

    second = _register(store, 0.2, drop=0.0, gain=1.8)
    promote(NAME, None, 0.01, 1.2)
    assert resolve_head(f"models:/{NAME}@{PRODUCTION}").threshold == 0.2

    failing = _register(store, 0.3, drop=0.05, gain=2.5)
    version, result = promote(NAME, None, 0.01, 1.2)
    assert version == failing and not result.passed
    assert resolve_head(f"models:/{NAME}@{PRODUCTION}").threshold == 0.2  # unchanged

    assert rollback(NAME) == first
    assert resolve_head(f"models:/{NAME}@{PRODUCTION}").threshold == 0.1
    with pytest.raises(InputError, match="no earlier production version"):
        rollback(NAME)
    assert second != first
    assert (store / "mlflow" / "artifacts").is_dir() and not (store / "mlruns").exists()


def test_registered_model_predicts_probabilities_through_pyfunc(store):
    import mlflow

    _register(store, 0.1, drop=0.0, gain=1.5)
    model = mlflow.pyfunc.load_model(f"models:/{NAME}@candidate")
    probabilities = model.predict([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    assert probabilities == pytest.approx([0.5, 0.9525741], abs=1e-6)


def test_unknown_model_uri_is_a_clear_error(store):
    with pytest.raises(InputError, match="cannot resolve models:/nothing@production"):
        resolve_head("models:/nothing@production")


def test_rollback_and_promote_before_anything_is_registered_say_so_in_one_line(store):
    with pytest.raises(InputError, match=f"cannot roll back model {NAME}: Registered Model .* not found"):
        rollback(NAME)
    with pytest.raises(InputError, match=f"model {NAME} has no version to promote"):
        promote(NAME, None, 0.01, 1.2)
    with pytest.raises(InputError, match=f"cannot resolve models:/{NAME}/7: .*not found"):
        version_card(NAME, "7")


@pytest.fixture
def unreachable_server(store, monkeypatch):
    """A tracking URI where nothing listens, and MLflow told not to retry (so the test takes seconds)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    return f"http://127.0.0.1:{port}"


def test_an_unreachable_server_is_not_read_as_nothing_registered(unreachable_server):
    """Not "no version to promote" / "nothing to roll back": a TrackingError naming the server."""
    calls = {
        "promote": lambda: promote(NAME, None, 0.01, 1.2),
        "roll back": lambda: rollback(NAME),
        "resolve": lambda: resolve_head(f"models:/{NAME}@{PRODUCTION}"),
    }
    for what, call in calls.items():
        with pytest.raises(TrackingError) as failure:
            call()
        assert not isinstance(failure.value, InputError), what
        message = str(failure.value)
        assert f"MLflow tracking server {unreachable_server} " in message and "\n" not in message, what
        assert is_transient(failure.value), what  # a flow still retries it
