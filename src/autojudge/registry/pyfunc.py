"""The judge head as an MLflow pyfunc model: predict(features) -> p(important)."""

from __future__ import annotations

import numpy as np
import torch
from mlflow.pyfunc import PythonModel

from autojudge.heads.artifact import load_head


class JudgeHeadModel(PythonModel):
    """Wraps a head file; `predict` takes feature rows [N][D] and returns p(important) [N]."""

    def load_context(self, context) -> None:
        self.head = load_head(context.artifacts["head"])

    def predict(self, model_input: list[list[float]], params: dict | None = None) -> list[float]:
        features = torch.as_tensor(np.asarray(model_input, dtype=np.float32))
        return self.head.probability(features).tolist()
