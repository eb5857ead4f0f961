"""The judge head as an MLflow pyfunc model: predict(features) -> p(important)."""

from __future__ import annotations

import numpy as np
import torch
from mlflow.pyfunc import PythonModel

from autojudge.heads.artifact import load_head


class JudgeHeadModel(PythonModel):
    """Wraps a head file; `predict` takes a feature matrix [N, D] and returns p(important) [N]."""

    def load_context(self, context) -> None:
        self.head = load_head(context.artifacts["head"])

    def predict(self, context, model_input, params=None) -> np.ndarray:
        features = torch.as_tensor(np.asarray(model_input, dtype=np.float32))
        return self.head.probability(features).numpy()
