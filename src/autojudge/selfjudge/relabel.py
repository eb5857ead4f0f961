"""Relabeling mined mismatches with SelfJudge: scores under the target, tau, labels, the labelled feature rows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from autojudge.engines.base import GenerationEngine
from autojudge.errors import InputError
from autojudge.io import atomic_path, write_text
from autojudge.models.pair import ModelPair
from autojudge.models.runtime import engine_from
from autojudge.params import Params, SelfJudgeParams
from autojudge.selfjudge.backends import PackedScorer
from autojudge.selfjudge.candidates import Candidate, from_mined_rows
from autojudge.selfjudge.labels import calibrate_tau, important_labels
from autojudge.selfjudge.score import LogprobScorer, preservation_scores


@dataclass
class Relabeled:
    """Scores and labels of the relabeled mismatches, row for row with the mined rows given."""

    problem_ids: list[str]
    positions: list[int]
    scores: np.ndarray
    autojudge_important: np.ndarray | None  # None: checker-free, no AutoJudge labels
    important: np.ndarray
    tau: float
    tau_source: str  # "set" or "calibrated on N problems"


def first_problems(rows: list[dict], problems: int | None) -> list[dict]:
    """The rows of the first ``problems`` problems, in order of first appearance (all when None)."""
    if problems is None:
        return rows
    kept: dict[str, None] = {}
    for row in rows:
        if row["problem_id"] not in kept and len(kept) < problems:
            kept[row["problem_id"]] = None
    return [row for row in rows if row["problem_id"] in kept]


def target_backends(params: Params, pair: ModelPair) -> tuple[GenerationEngine, LogprobScorer]:
    """The generation engine of ``selfjudge.engine`` on the target, and the packed scorer of its log-probabilities."""
    settings = params.selfjudge
    engine = engine_from(
        params.model_copy(
            update={
                "mining": params.mining.model_copy(
                    update={"engine": settings.engine, "batch_size": settings.batch_size, "gumbel_seed": None}
                )
            }
        ),
        pair,
    )
    return engine, PackedScorer(pair.target, pair.pad_token_id, settings.batch_size)


def mined_scores(
    params: Params, rows: list[dict], engine: GenerationEngine, scorer: LogprobScorer, eos_token_ids: set[int]
) -> tuple[list[Candidate], np.ndarray]:
    """The mined mismatches as candidates and their preservation scores under the target."""
    candidates = from_mined_rows(
        rows, engine, params.selfjudge.n_next, params.mining.max_response_tokens, eos_token_ids
    )
    return candidates, np.asarray(preservation_scores([c.replacement for c in candidates], scorer))


def calibrated_tau(settings: SelfJudgeParams, rows: list[dict], scores: np.ndarray) -> tuple[float, str]:
    """tau from AutoJudge's labels of the first ``calibration_problems`` problems of scored mined rows."""
    calibration = {row["problem_id"] for row in first_problems(rows, settings.calibration_problems)}
    subset = np.asarray([row["problem_id"] in calibration for row in rows])
    autojudge = np.asarray([row["important"] for row in rows], dtype=int)
    tau = calibrate_tau(scores[subset], autojudge[subset], settings.calibration_recall)
    source = (
        f"labels {settings.calibration_recall:.0%} of AutoJudge-important mismatches important on "
        f"{len(calibration)} problems"
    )
    return tau, source


def relabel(
    params: Params, rows: list[dict], engine: GenerationEngine, scorer: LogprobScorer, eos_token_ids: set[int]
) -> Relabeled:
    """Score every mined mismatch, set tau (given, or calibrated on AutoJudge's labels) and label."""
    settings = params.selfjudge
    if not rows:
        raise InputError("selfjudge: no mined mismatches to relabel")
    candidates, scores = mined_scores(params, rows, engine, scorer, eos_token_ids)
    if settings.tau is not None:
        tau, source = settings.tau, "set in params"
    else:
        tau, source = calibrated_tau(settings, rows, scores)
    return Relabeled(
        [c.problem_id for c in candidates],
        [c.position for c in candidates],
        scores,
        np.asarray([row["important"] for row in rows], dtype=int),
        important_labels(scores, tau),
        tau,
        source,
    )


def write_relabeled_features(features_dir: Path, out_dir: Path, relabeled: Relabeled) -> int:
    """Copy the feature rows of the relabeled mismatches with SelfJudge's labels (and scores); returns rows."""
    table = pq.read_table(Path(features_dir) / "features.parquet").replace_schema_metadata(None)
    index = {
        (p, q): i for i, (p, q) in enumerate(zip(relabeled.problem_ids, relabeled.positions, strict=True))
    }
    keys = zip(table.column("problem_id").to_pylist(), table.column("position").to_pylist(), strict=True)
    found = [index.get(key, -1) for key in keys]
    table = table.filter(pa.array([i >= 0 for i in found]))
    order = np.asarray([i for i in found if i >= 0])
    if len(order) != len(index):
        raise InputError(
            f"{features_dir}: features lack {len(index) - len(order)} of the relabeled mismatches"
        )
    table = table.set_column(
        table.schema.get_field_index("important"),
        "important",
        pa.array(relabeled.important[order].astype(bool)),
    )
    if relabeled.autojudge_important is not None:
        table = table.append_column(
            "autojudge_important", pc.cast(pa.array(relabeled.autojudge_important[order]), pa.bool_())
        )
    table = table.append_column("score", pa.array(relabeled.scores[order]))
    with atomic_path(out_dir / "features.parquet") as temporary:
        pq.write_table(table, temporary)
    write_text(out_dir / "spec.json", (Path(features_dir) / "spec.json").read_text(encoding="utf-8"))
    return len(order)


def summary(relabeled: Relabeled) -> dict:
    """Figures of the relabeling for metrics: tau, label shares, agreement with AutoJudge (where it labelled)."""
    selfjudge = relabeled.important.astype(bool)
    figures = {
        "mismatches": len(selfjudge),
        "problems": len(set(relabeled.problem_ids)),
        "tau": relabeled.tau,
        "tau_source": relabeled.tau_source,
        "important_fraction": float(selfjudge.mean()),
        "score_quantiles": {
            str(q): float(np.quantile(relabeled.scores, q)) for q in (0.1, 0.25, 0.5, 0.75, 0.9)
        },
    }
    if relabeled.autojudge_important is not None:
        autojudge = relabeled.autojudge_important.astype(bool)
        figures |= {
            "autojudge_important_fraction": float(autojudge.mean()),
            "agreement_with_autojudge": float((autojudge == selfjudge).mean()),
            "recall_of_autojudge_important": float(selfjudge[autojudge].mean()) if autojudge.any() else None,
        }
    return figures
