"""The features data set: one row per mismatch with its label and its feature vector (Parquet)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from autojudge.errors import InputError
from autojudge.features.spec import FeatureSpec
from autojudge.io import read_json, write_json
from autojudge.mining.dataset import read_parquet, write_parquet

if TYPE_CHECKING:  # reading features (stage train) needs no model stack
    from autojudge.features.hidden_states import MismatchRow

COLUMNS = ("problem_id", "position", "target_token", "draft_token", "important", "features")
SPEC_FILE = "spec.json"


def write_features(directory: Path, features: np.ndarray, rows: list[MismatchRow], spec: FeatureSpec) -> None:
    records = [
        {
            "problem_id": row.problem_id,
            "position": row.position,
            "target_token": row.target_token,
            "draft_token": row.draft_token,
            "important": row.important,
            "features": vector.tolist(),
        }
        for row, vector in zip(rows, features, strict=True)
    ]
    write_parquet(Path(directory) / "features.parquet", records)
    write_json(Path(directory) / SPEC_FILE, asdict(spec))


def read_features(directory: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, FeatureSpec]:
    """Features [N, D], labels [N] (1 = important), problem ids [N] and the spec."""
    directory = Path(directory)
    spec = FeatureSpec(**read_json(directory / SPEC_FILE))
    dataset = read_parquet(directory / "features.parquet", COLUMNS).with_format("numpy")
    features = np.asarray(np.stack(dataset["features"]), dtype=np.float32)
    if features.shape[1] != spec.dimension:
        raise InputError(
            f"{directory}: features have {features.shape[1]} columns but {SPEC_FILE} says {spec.dimension}"
            f" ({json.dumps(asdict(spec))})"
        )
    return features, np.asarray(dataset["important"], dtype=int), np.asarray(dataset["problem_id"]), spec
