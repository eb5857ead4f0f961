"""The judge head as an MLflow pyfunc model: predict(features) -> p(important).

The model takes feature rows with one column per feature (the head's hidden-state features, in order
``f0..f{n-1}``) as a list of rows, a numpy array [N, n] or a pandas DataFrame, and returns p(important)
for each row, as `JudgeHead.probability` computes it. Its signature declares n unnamed double columns:
MLflow turns a list or an array into such a frame, and a DataFrame's columns are taken in order (by name
when they are ``f0..f{n-1}``), so ``mlflow models serve`` scores the usual ``dataframe_split`` payload.
MLflow checks the number of columns and their types against the signature before the model runs (too few
or a non-numeric column is its error; like any column signature, it drops the columns past the n-th); the
model then names non-finite values, and all of these for versions registered without such a signature.
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
import torch
from mlflow.exceptions import MlflowException
from mlflow.models import ModelSignature
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE
from mlflow.pyfunc import PythonModel
from mlflow.types.schema import ColSpec, DataType, Schema

from autojudge.errors import InputError
from autojudge.heads.artifact import JudgeHead, load_head


class FeatureInputError(InputError, MlflowException):
    """Rows that are not the head's features; MLflow's scoring server answers it with HTTP 400."""

    def __init__(self, message: str) -> None:
        MlflowException.__init__(self, message, error_code=INVALID_PARAMETER_VALUE)


def feature_names(dimension: int) -> list[str]:
    """The feature columns of a head with ``dimension`` features: f0..f{dimension-1}."""
    return [f"f{index}" for index in range(dimension)]


def model_signature(dimension: int) -> ModelSignature:
    """``dimension`` double columns in, p(important) out.

    The input columns are unnamed: MLflow matches named columns by name, and the frame it makes of a list
    or a numpy array has none. A DataFrame may still name them f0..f{dimension-1}.
    """
    return ModelSignature(
        inputs=Schema([ColSpec(DataType.double) for _ in range(dimension)]),
        outputs=Schema([ColSpec(DataType.double)]),
    )


def input_example(head: JudgeHead) -> pd.DataFrame:
    """Two rows of the head's features, columns f0..f{n-1}: all zeros, and the weights' signs."""
    rows = np.stack([np.zeros(head.features.dimension), np.sign(head.weight.float().numpy())])
    return pd.DataFrame(rows, columns=feature_names(head.features.dimension))


def feature_rows(model_input, dimension: int) -> torch.Tensor:
    """``model_input`` (list of rows, numpy array or DataFrame) as float64 rows [N, dimension].

    A DataFrame whose columns are f0..f{dimension-1} in any order is read by name, any other by position.
    Raises `FeatureInputError` naming what is wrong: the shape, a non-numeric or a non-finite value.
    """
    names = feature_names(dimension)
    expected = f"rows of {dimension} features ({names[0]}..{names[-1]})"
    if isinstance(model_input, pd.DataFrame):
        if set(model_input.columns) == set(names):
            model_input = model_input[names]
        values = model_input.to_numpy()
    elif isinstance(model_input, list | tuple):
        for index, row in enumerate(model_input):
            if not isinstance(row, list | tuple | np.ndarray) or len(row) != dimension:
                got = f"{len(row)} features" if isinstance(row, list | tuple | np.ndarray) else repr(row)
                raise FeatureInputError(f"judge head expects {expected}; row {index} has {got}")
        values = np.asarray(model_input) if model_input else np.zeros((0, dimension))
        if values.dtype.kind not in "iuf":  # keep each value as given (numpy would make numbers strings)
            values = np.array(model_input, dtype=object)
    elif isinstance(model_input, np.ndarray):
        values = model_input
    else:
        raise FeatureInputError(
            f"judge head expects {expected} as a list of rows, a numpy array or a pandas DataFrame, "
            f"got {type(model_input).__name__}"
        )
    if values.ndim != 2 or values.shape[1] != dimension:
        got = (
            f"{values.shape[1]} features per row" if values.ndim == 2 else f"an array of shape {values.shape}"
        )
        raise FeatureInputError(f"judge head expects {expected}, got {got}")
    if values.dtype.kind not in "iuf":
        for (row, column), value in np.ndenumerate(values):
            if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
                raise FeatureInputError(
                    f"judge head features must be numbers: row {row}, feature {names[column]} is {value!r}"
                )
    # row-major, like rows built directly: a DataFrame's array is column-major, and torch's matmul over
    # another layout sums in another order (differences of ~1e-6 from `JudgeHead.probability`)
    values = np.ascontiguousarray(values, dtype=np.float64)
    if not np.isfinite(values).all():
        row, column = np.argwhere(~np.isfinite(values))[0]
        raise FeatureInputError(
            f"judge head features must be finite: row {row}, feature {names[column]} is {values[row, column]}"
        )
    return torch.from_numpy(values)


class JudgeHeadModel(PythonModel):
    """Wraps a head file; `predict` takes feature rows [N][D] and returns p(important) [N]."""

    def load_context(self, context) -> None:
        self.head = load_head(context.artifacts["head"])

    # MLflow hands a frame to a model with a column signature (a DataFrame hint infers no signature and
    # validates nothing); versions registered with a `list[list[float]]` hint get the input unchanged.
    def predict(self, model_input: pd.DataFrame, params: dict | None = None) -> list[float]:
        features = feature_rows(model_input, self.head.features.dimension)
        return self.head.probability(features).tolist()
