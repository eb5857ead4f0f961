"""The out-of-fold protocol end to end in the library: fold heads trained without their fold, and each
problem decoded by the head of its fold."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from helpers import write_params

from autojudge.errors import InputError
from autojudge.evaluation.sweep import Setting, run_settings
from autojudge.features.hidden_states import MismatchRow
from autojudge.features.spec import FeatureSpec
from autojudge.features.store import write_features
from autojudge.heads.artifact import JudgeHead, load_head
from autojudge.heads.out_of_fold import (
    FoldHeads,
    fit_fold_heads,
    fold_heads_for,
    load_fold_heads,
    threshold_at,
)
from autojudge.models.runtime import task_from
from autojudge.models.tokenizer import tokenizer_hash
from autojudge.params import load_params


def _head(spec: FeatureSpec, threshold: float, token_hash: str = "h", info: dict | None = None) -> JudgeHead:
    """p(important) = 0.5 everywhere: threshold 1 accepts every mismatch, threshold 0 none."""
    return JudgeHead(
        torch.zeros(spec.dimension), 0.0, threshold, spec, "toy", "arith", token_hash, info or {}
    )


def test_each_fold_head_is_fitted_without_its_folds_rows(tmp_path):
    problems = [f"p{i}" for i in range(10)]
    groups = np.array([p for p in problems[:8] for _ in range(3)])  # p8, p9 mined nothing
    features = np.arange(len(groups), dtype=np.float32)[:, None]
    spec = FeatureSpec("target", 1, 1)
    seen = []

    def fit(rows):
        seen.append(set(groups[rows].tolist()))
        return _head(spec, 0.5, info={"thresholds_by_recall": {"0.9": 0.25}})

    folds = fit_fold_heads(features, groups, problems, 3, 0, fit, tmp_path / "folds")
    assert folds == load_fold_heads(tmp_path / "folds")
    assert sorted(folds.fold_of) == problems
    for fold, trained_on in enumerate(seen):
        held_out = {p for p, f in folds.fold_of.items() if f == fold}
        assert trained_on.isdisjoint(held_out) and trained_on | held_out >= set(groups.tolist())
    head = load_head(folds.paths[0])
    assert threshold_at(head, None) == 0.5 and threshold_at(head, 0.9) == 0.25
    with pytest.raises(InputError, match=r"no threshold for recall 0\.7"):
        threshold_at(head, 0.7)
    with pytest.raises(InputError, match="not in the evaluated split"):
        fit_fold_heads(features, groups, problems[:5], 2, 0, fit, tmp_path / "other")
    with pytest.raises(InputError, match="in no out-of-fold assignment"):
        folds.fold("p77")


def test_fold_heads_decode_only_the_mined_split_under_the_protocol(repo, tmp_path):
    base = load_params(repo / "params.yaml")
    assert fold_heads_for(base, tmp_path, "test") is None  # held_out: the one head everywhere
    oof = base.model_copy(
        update={
            "train": base.train.model_copy(update={"protocol": "out_of_fold"}),
            "mining": base.mining.model_copy(update={"split": "test"}),
        }
    )
    assert fold_heads_for(oof, tmp_path, "shifted") is None  # never mined: the head of every fold
    with pytest.raises(InputError, match=r"assignment\.json"):
        fold_heads_for(oof, tmp_path, "test")


@pytest.mark.slow
def test_every_problem_is_decoded_by_the_head_of_its_fold(repo, tmp_path, arith_dir, toy_pair):
    params = load_params(write_params(repo, tmp_path, arith_dir, {"decoding.max_new_tokens": 48}))
    spec = FeatureSpec("target", toy_pair.target.config.hidden_size, toy_pair.draft.config.hidden_size)
    token_hash = tokenizer_hash(toy_pair.tokenizer)
    accept_all = _head(spec, 1.0, token_hash).save(tmp_path / "accept_all.safetensors")
    accept_none = _head(spec, 0.0, token_hash).save(tmp_path / "accept_none.safetensors")
    ids = [e.id for e in task_from(params).load_split("test", 6)]
    judge, exact = Setting("judge", 8, threshold=1.0), Setting("exact", 8)  # folds: their heads' own

    def run(fold_of: dict[str, int] | None, head=accept_all):
        folds = fold_of and FoldHeads(fold_of, [accept_all, accept_none])
        [(_, summary, _)] = run_settings(params, [judge], "test", 6, head, fold_heads=folds)
        return summary

    [(_, exact_sd, _)] = run_settings(params, [exact], "test", 6, None)
    everything = run(None)
    assert everything.accepted_mismatches > 0
    all_in_fold_1 = run(dict.fromkeys(ids, 1))  # the head of fold 1 accepts nothing: exact SD
    assert (all_in_fold_1.tokens, all_in_fold_1.target_passes) == (exact_sd.tokens, exact_sd.target_passes)
    assert all_in_fold_1.accepted_mismatches == 0
    all_in_fold_0 = run(dict.fromkeys(ids, 0), head=accept_none)  # fold 0's head, not the main one
    assert (all_in_fold_0.tokens, all_in_fold_0.target_passes) == (
        everything.tokens,
        everything.target_passes,
    )
    mixed = run({i: n % 2 for n, i in enumerate(ids)})
    assert mixed.examples == 6 and 0 < mixed.accepted_mismatches < everything.accepted_mismatches


def test_train_stage_writes_one_head_per_fold_under_the_protocol(repo, tmp_path, arith_dir, toy_pair):
    """stages/train.py with ``train.protocol: out_of_fold``: the head of every problem, and K fold heads."""
    overrides = {
        "mining.split": "test",
        "train.protocol": "out_of_fold",
        "train.out_of_fold_folds": 3,
        "train.c_grid": [0.1],
        "train.folds": 2,
    }
    params_path = write_params(repo, tmp_path, arith_dir, overrides)
    spec = FeatureSpec("target", toy_pair.target.config.hidden_size, toy_pair.draft.config.hidden_size)
    ids = [e.id for e in task_from(load_params(params_path)).load_split("test")][:60]
    rng = np.random.default_rng(0)
    rows = [MismatchRow(i, n, 1, 2, n % 3 == 0, 0, 1, 0) for i in ids for n in range(3)]
    labels = np.array([row.important for row in rows])
    features = rng.normal(size=(len(rows), spec.dimension)).astype(np.float32) + labels[:, None]
    write_features(tmp_path / "features", features, rows, spec)
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    subprocess.run(
        [sys.executable, str(repo / "stages" / "train.py"), "--params", str(params_path), "--features",
         str(tmp_path / "features"), "--out", str(tmp_path / "heads"), "--metrics", str(tmp_path / "m.json"),
         "--plots", str(tmp_path / "plots")],
        cwd=tmp_path, env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    assert load_head(tmp_path / "heads" / "head.safetensors").info["rows"]["train"] > 0
    folds = load_fold_heads(tmp_path / "heads" / "folds")
    assert len(folds.paths) == 3 and set(folds.fold_of) >= set(ids)
    params = load_params(params_path)
    for path in folds.paths:
        head = load_head(path)
        assert threshold_at(head, params.train.target_recall) == head.threshold
        assert all(threshold_at(head, r) >= 0 for r in params.evaluate.recalls)
