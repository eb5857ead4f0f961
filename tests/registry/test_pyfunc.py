"""The registered head as an MLflow pyfunc model, in a real MLflow store (SQLite in a temporary folder):
loaded back by an outside client, and scored by `mlflow models serve` over HTTP."""

import json
import re
import sys
import urllib.error
import urllib.request

import numpy as np
import pandas as pd
import pytest
import torch
from helpers import free_port, server_process
from mlflow.exceptions import MlflowException

from autojudge.errors import InputError
from autojudge.features.spec import FeatureSpec
from autojudge.heads.artifact import JudgeHead
from autojudge.registry.promotion import register_version
from autojudge.registry.pyfunc import FeatureInputError, feature_names, feature_rows
from autojudge.registry.runs import log_model_and_card, log_training_run
from autojudge.tracking.store import use_tracking

NAME = "autojudge-arith-pyfunc-test"
URI = f"models:/{NAME}@candidate"
DIMENSION = 5
NAMES = feature_names(DIMENSION)
SERVER_START_SECONDS = 120


def _head() -> JudgeHead:
    weight = torch.tensor([0.5, -1.25, 2.0, 0.75, -0.3])
    return JudgeHead(weight, -0.2, 0.1, FeatureSpec("target", DIMENSION, 3), "toy", "arith", "h")


@pytest.fixture(scope="module")
def registered(tmp_path_factory):
    """A head logged and registered as `URI` (as the register stage does it) in one store for the module:
    (the store's folder, its tracking URI, the head)."""
    directory = tmp_path_factory.mktemp("store")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(directory)
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        head = _head()
        path = head.save(directory / "head" / "head.safetensors")
        run_id = log_training_run(NAME, {"train": {"c": 0.1}}, {"validation_auc": 0.9}, [path])
        model_uri = log_model_and_card(run_id, path, {}, "# card\n", {}, [])
        register_version(model_uri, NAME, "# card\n", {"threshold": "0.1"}, "candidate")
        yield directory, use_tracking(), head


def _rows() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(7, DIMENSION)).astype(np.float32)


def _probability(head: JudgeHead, rows: np.ndarray) -> list[float]:
    return head.probability(torch.from_numpy(rows)).tolist()


def _load_model():
    """The registered head as an outside client loads it (the module's store is in the working folder)."""
    import mlflow

    use_tracking()
    return mlflow.pyfunc.load_model(URI)


def test_registered_head_predicts_lists_arrays_and_dataframes(registered):
    head = registered[2]
    model = _load_model()
    rows = _rows()
    expected = _probability(head, rows)
    inputs = {
        "list of rows": rows.tolist(),
        "float32 array": rows,
        "float64 array": rows.astype(np.float64),
        "DataFrame f0..f4": pd.DataFrame(rows, columns=NAMES),
        "DataFrame, columns reordered": pd.DataFrame(rows, columns=NAMES)[NAMES[::-1]],
        "DataFrame, unnamed columns": pd.DataFrame(rows),
    }
    for form, model_input in inputs.items():
        assert model.predict(model_input) == pytest.approx(expected, abs=1e-6), form

    schema = model.metadata.get_input_schema()
    assert [spec.type.name for spec in schema.inputs] == ["double"] * DIMENSION
    assert model.metadata.get_output_schema().inputs[0].type.name == "double"
    assert list(model.input_example.columns) == NAMES
    assert model.predict(model.input_example) == pytest.approx(
        _probability(head, model.input_example.to_numpy(np.float32)), abs=1e-6
    )


def test_registered_head_names_bad_input(registered):
    model = _load_model()
    rows = _rows().tolist()
    with pytest.raises(MlflowException, match=r"declares 5 inputs\s+but the provided value only has 4"):
        model.predict([row[:4] for row in rows])
    with pytest.raises(MlflowException, match=r"column f2\. Can not safely convert str to float64"):
        model.predict(pd.DataFrame(rows, columns=NAMES).astype({"f2": str}))
    with pytest.raises(FeatureInputError, match="row 1, feature f3 is nan"):
        model.predict([rows[0], [*rows[1][:3], float("nan"), rows[1][4]]])


@pytest.mark.parametrize(
    ("model_input", "message"),
    [
        ([[0.0] * 5, [0.0] * 6], "expects rows of 5 features (f0..f4); row 1 has 6 features"),
        (np.zeros((2, 4)), "expects rows of 5 features (f0..f4), got 4 features per row"),
        (pd.DataFrame(np.zeros((1, 6))), "got 6 features per row"),
        (np.zeros(5), "got an array of shape (5,)"),
        ([[0.0, 1.0, "x", 3.0, 4.0]], "must be numbers: row 0, feature f2 is 'x'"),
        ([[0.0, 1.0, 2.0, None, 4.0]], "must be numbers: row 0, feature f3 is None"),
        (np.array([[0.0, 1.0, 2.0, 3.0, np.inf]]), "must be finite: row 0, feature f4 is inf"),
        ({"f0": 1.0}, "as a list of rows, a numpy array or a pandas DataFrame, got dict"),
    ],
)
def test_feature_rows_name_what_is_wrong(model_input, message):
    with pytest.raises(InputError, match=re.escape(message)):
        feature_rows(model_input, DIMENSION)


def _post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.slow
def test_mlflow_models_serve_scores_a_dataframe_split_payload(registered):
    directory, tracking_uri, head = registered
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        sys.executable, "-m", "mlflow", "models", "serve", "-m", URI, "--env-manager", "local",
        "-h", "127.0.0.1", "-p", str(port),
    ]  # fmt: skip
    log = directory / "serve.log"
    with server_process(
        command, url, log, env={"MLFLOW_TRACKING_URI": tracking_uri, "MLFLOW_REGISTRY_URI": tracking_uri}
    ):
        rows = _rows()
        payload = {"dataframe_split": {"columns": NAMES, "data": rows.tolist()}}
        status, answer = _post(f"{url}/invocations", payload)
        assert status == 200, f"{answer}\n{log.read_text()[-3000:]}"
        assert answer["predictions"] == pytest.approx(_probability(head, rows), abs=1e-6)

        payload = {"dataframe_split": {"columns": NAMES[:4], "data": rows[:, :4].tolist()}}
        status, answer = _post(f"{url}/invocations", payload)
        assert status == 400 and "declares 5 inputs" in answer["message"], answer
