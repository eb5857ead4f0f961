"""The shipped context head (method judge-context) against the paper's head, the free rules and the ceiling,
on Algorithm 1's committed records: out-of-fold ranking and a replayed speed at a lost-problem budget.

Per mismatch of the records, one teacher-forced target pass per problem (``features.hidden_states``) gives
every feature group of ``features.spec``. Outer 5-fold cross-validation grouped by problem (seeded): in each
fold both heads are fit on the other four folds exactly as stage train fits them (``heads.fitting.fitted_head``
with params.yaml's train settings: the context head over train.context's candidate group sets and important
weights, the paper's head on ``token_state`` with weight 1; ``--c-grid`` may shorten train.c_grid, ``--inner``
its inner folds) and score the held-out fold with the head class the engines load (``JudgeHead``). The free
rules need no fit: 1 - p(draft token) and log p(top-1) - log p(draft) of the target's logits at the slot.

Ranking (pooled out-of-fold scores): ROC-AUC and the share of unimportant mismatches accepted while at most
0 / 1% / 5% of the important ones are, with 95% bootstraps over problems (``results/judge-features``'s
functions), and each fold's own ROC-AUC. A head's pooled scores are its fold heads' p(important) recalibrated
per fold on the validation problems fit_head held out of its fit (Platt scaling: monotone per fold; a head
fit with weight 10 on important rows scores higher than one fit with weight 1, so raw scores pooled across
folds mix two scales).

Replayed speed (``operating_points``): a mismatch is accepted iff its score is below a threshold; greedy SD
is replayed over the mined responses (``evaluation.ceiling.replay``) and a problem counts as lost if it
accepts any important mismatch (Algorithm 1: that swap changed the answer). It is an estimate, not a decode.
Thresholds: the largest whose lost share is <= 0 / 1% / 2%, picked on the pooled out-of-fold scores
(optimistic: chosen on the scores it is judged on) or per outer fold on its training side (honest: a head on
its fit's validation problems, a rule on all training-fold problems), and the head's own shipped threshold
(train.target_recall of its validation problems' important rows). ``--references`` (the arith data folder)
counts the lost problems the target had answered correctly; ``--goal`` asks what lost share a MAT ratio needs.

Run from the repository root of a checkout where ``autojudge preset smollm2-eagle && dvc repro
finetune@smollm2-arith prepare@arith`` ran (README.md here)::

    python results/context-head/context_head.py --name eagle \\
        --records results/proposers/importance/eagle-head results/proposers/importance-unseen/eagle-head \\
        results/judge-features/mined-extra --target models/smollm2-arith/target --references data/arith \\
        --windows 8 4 32 --goal 1.21
    python results/context-head/context_head.py --name toy-arith --records results/ceiling/toy-arith \\
        --target models/toy_mixed/target --references data/arith --windows 32 8

Writes ``<name>.json``, ``<name>.md`` and ``<name>.png`` here.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import numpy as np
import torch
from operating_points import BUDGETS, Method, evaluate_methods, markdown, plot
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GroupShuffleSplit

from autojudge.bench.machine import processor_name
from autojudge.features.groups import token_class_table
from autojudge.features.hidden_states import MismatchStates, encode_mismatches
from autojudge.features.spec import GROUPS, PAPER_GROUPS, FeatureSpec
from autojudge.heads.fitting import fitted_head
from autojudge.io import atomic_path, write_text
from autojudge.mining.search import MinedProblem
from autojudge.mining.shards import load_shard
from autojudge.models.pair import load_causal_lm
from autojudge.models.tokenizer import load_tokenizer, tokenizer_hash
from autojudge.params import Params, load_params
from autojudge.tasks.arith import ArithTask

OUT = Path(__file__).parent
OUTER_FOLDS = 5


def features_study() -> ModuleType:
    """``results/judge-features/judge_features.py``: its ranking metrics and problem bootstrap."""
    path = OUT.parent / "judge-features" / "judge_features.py"
    spec = importlib.util.spec_from_file_location("judge_features", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Mined:
    """Every mismatch's feature rows (all groups), label and problem, as stage features writes them."""

    states: MismatchStates
    spec: FeatureSpec
    features: np.ndarray  # [M, spec.dimension]
    labels: np.ndarray  # [M] 1 = important
    problem: np.ndarray  # [M] problem id
    token_class: torch.Tensor
    tokenizer_digest: str
    argmax_is_target: int  # mismatches whose target argmax is the recorded target token

    def keys(self) -> list[tuple[str, int]]:
        return [(row.problem_id, row.position) for row in self.states.rows]


@torch.inference_mode()
def encode(problems: list[MinedProblem], target_dir: Path, batch_size: int) -> Mined:
    """All four feature groups of every mismatch from the target (``token_state`` read from the target)."""
    model = load_causal_lm(target_dir, torch.float32, role="target")
    tokenizer = load_tokenizer(target_dir, "target")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    hidden = model.config.hidden_size
    spec = FeatureSpec("target", hidden, hidden, GROUPS)
    states = encode_mismatches(model, model, problems, [spec], pad, batch_size, model.config.vocab_size)
    table = token_class_table(tokenizer)
    rows = states.rows
    target_tokens = torch.tensor([row.target_token for row in rows])
    return Mined(
        states,
        spec,
        states.features(spec, table),
        np.array([row.important for row in rows], dtype=int),
        np.array([row.problem_id for row in rows]),
        table,
        tokenizer_hash(tokenizer),
        int((states.choices == target_tokens).sum()),
    )


def outer_folds(problems: list[MinedProblem], seed: int) -> dict[str, int]:
    """Problem id -> outer fold: a seeded permutation of the problems cut into ``OUTER_FOLDS`` parts."""
    order = np.random.default_rng(seed).permutation(len(problems))
    return {
        problems[i].id: fold for fold, part in enumerate(np.array_split(order, OUTER_FOLDS)) for i in part
    }


def validation_problems(params: Params, data: Mined, train: np.ndarray) -> set[str]:
    """The problems ``fit_head`` holds out of its fit on rows ``train`` (its own seeded grouped split)."""
    settings = params.train
    splitter = GroupShuffleSplit(
        n_splits=1, test_size=settings.validation_fraction, random_state=settings.seed
    )
    _, held = next(splitter.split(data.features[train], data.labels[train], data.problem[train]))
    return set(data.problem[train][held].tolist())


def fit_fold(
    params: Params, data: Mined, train: np.ndarray, candidates: tuple[tuple[str, ...], ...], weights: tuple
) -> tuple[np.ndarray, dict]:
    """A head fit on rows ``train`` as stage train fits it; its p(important) of every row and its choices."""
    started = time.perf_counter()
    fit, head = fitted_head(
        params, data.features[train], data.labels[train], data.problem[train], data.spec, (1.0,),
        data.tokenizer_digest, candidates, weights, data.token_class,
    )  # fmt: skip
    rows = torch.from_numpy(data.states.features(head.features, head.token_class))
    scores = head.probability(rows).numpy().astype(np.float64)
    return scores, {
        "groups": list(head.features.groups),
        "important_weight": fit.important_weight,
        "best_c": fit.best_c,
        "cv_auc_by_candidate": {k: round(v, 4) for k, v in fit.cv_auc_by_candidate.items()},
        "cv_auc_by_c": {str(c): round(v, 4) for c, v in fit.cv_auc_by_c.items()},
        "validation_auc": round(fit.validation_auc, 4),
        "shipped_threshold": head.threshold,  # train.target_recall of the validation problems' important rows
        "recall_1_threshold": fit.thresholds_by_recall[1.0],
        "rows": {"fit": fit.train_rows, "validation": fit.validation_rows},
        "seconds": round(time.perf_counter() - started, 1),
    }


def recalibrated(
    scores: np.ndarray, labels: np.ndarray, validation: np.ndarray, threshold: float
) -> tuple[np.ndarray, float, list[float]]:
    """Platt scaling of a fold head's p(important) (and its threshold), fit on its validation rows: a monotone
    per-fold map, so that pooled out-of-fold scores of heads fit with different weights compare like with like."""

    def log_odds(p: np.ndarray) -> np.ndarray:
        p = np.clip(p, 1e-12, 1 - 1e-12)
        return np.log(p / (1 - p))[:, None]

    platt = LogisticRegression(C=1e6, max_iter=1000).fit(log_odds(scores[validation]), labels[validation])
    slope, intercept = float(platt.coef_[0, 0]), float(platt.intercept_[0])
    if slope <= 0:
        raise ValueError(f"Platt slope {slope}: the head ranks its validation rows backwards")
    mapped = platt.predict_proba(log_odds(np.append(scores, threshold)))[:, 1]
    return mapped[:-1], float(mapped[-1]), [round(slope, 4), round(intercept, 4)]


def cross_fit(
    params: Params, data: Mined, folds: dict[str, int], only: int | None
) -> tuple[dict, list[dict]]:
    """Out-of-fold scores of both heads (raw and recalibrated), per-row validation masks of each fold's fit,
    the heads' own thresholds (recalibrated) and the folds' choices."""
    context = params.train.context
    heads = {
        "context head": (tuple(tuple(g) for g in context.groups), tuple(context.important_weights)),
        "paper head": ((PAPER_GROUPS,), (1.0,)),
    }
    fold_of_row = np.array([folds[p] for p in data.problem])
    raw = {name: np.full(len(data.labels), np.nan) for name in heads}
    scores = {name: np.full(len(data.labels), np.nan) for name in heads}
    validation = {name: np.zeros((OUTER_FOLDS, len(data.labels)), dtype=bool) for name in heads}
    by_fold = {name: np.full((OUTER_FOLDS, len(data.labels)), np.nan) for name in heads}
    shipped = {name: np.full(OUTER_FOLDS, np.nan) for name in heads}
    report = []
    for fold in range(OUTER_FOLDS) if only is None else [only]:
        train, held = fold_of_row != fold, fold_of_row == fold
        checked = train & np.isin(
            data.problem, list(validation_problems(params, data, np.flatnonzero(train)))
        )
        entry = {"fold": fold, "held_problems": sum(f == fold for f in folds.values())}
        for name, (candidates, weights) in heads.items():
            fold_scores, facts = fit_fold(params, data, np.flatnonzero(train), candidates, weights)
            calibrated, shipped[name][fold], facts["platt"] = recalibrated(
                fold_scores, data.labels, checked, facts["shipped_threshold"]
            )
            raw[name][held], scores[name][held] = fold_scores[held], calibrated[held]
            validation[name][fold], by_fold[name][fold] = checked, calibrated
            replayed = roc_auc_score(data.labels[checked], fold_scores[checked])
            if abs(replayed - facts["validation_auc"]) > 1e-3:
                raise ValueError(f"fold {fold}: fit_head's validation split was not reproduced")
            facts["held_out_auc"] = round(float(roc_auc_score(data.labels[held], fold_scores[held])), 4)
            entry[name] = facts
            print(
                f"fold {fold} {name}: {'+'.join(facts['groups'])} w={facts['important_weight']:g} "
                f"C={facts['best_c']:g} validation ROC-AUC {facts['validation_auc']:.3f}, held out "
                f"{facts['held_out_auc']:.3f} ({facts['seconds']:.0f} s)",
                flush=True,
            )
        entry["validation_problems"] = len(set(data.problem[checked]))
        report.append(entry)
    fitted = {"raw": raw, "scores": scores, "validation": validation, "by_fold": by_fold, "shipped": shipped}
    return fitted, report


def fold_aucs(scores: np.ndarray, labels: np.ndarray, fold_of_row: np.ndarray) -> list[float]:
    """ROC-AUC of each outer fold's held-out rows (one model's scores each)."""
    return [
        round(float(roc_auc_score(labels[fold_of_row == f], scores[fold_of_row == f])), 4)
        for f in range(OUTER_FOLDS)
    ]


def target_correct(problems: list[MinedProblem], references: Path | None) -> list[bool] | None:
    """Whether the target's recorded answer matches the reference (arith's train split), per problem."""
    if references is None:
        return None
    task = ArithTask(references)
    reference = {example.id: example.answer for example in task.load_split("train")}
    return [task.equivalent(p.answer, reference[p.id]) for p in problems]


def methods(data: Mined, fitted: dict, folds: dict[str, int]) -> list[Method]:
    """The four judges: both heads (honest thresholds on their fits' validation problems) and both rules
    (on all training-fold problems)."""
    log_draft = data.states.scores[:, 0].double().numpy()
    gap = data.states.scores[:, 2].double().numpy()
    fold_of_row = np.array([folds[p] for p in data.problem])
    training_side = np.stack([fold_of_row != fold for fold in range(OUTER_FOLDS)])
    out = [
        Method(name, *(fitted[key][name] for key in ("scores", "validation", "by_fold", "shipped")))
        for name in ("context head", "paper head")
    ]
    for name, scores in (
        ("rule: 1 - p(draft token)", 1 - np.exp(log_draft)),
        ("rule: log p(top-1) - log p(draft)", gap),
    ):
        out.append(Method(name, scores, training_side, np.broadcast_to(scores, training_side.shape), None))
    return out


def rank(judges: list[Method], data: Mined, fitted: dict, folds: dict[str, int]) -> dict:
    """ROC-AUC and the accepted shares of the pooled out-of-fold scores with their bootstraps over problems
    (``judge_features``), the per-fold ROC-AUCs and, for heads, the pooled ROC-AUC before recalibration."""
    study, fold_of_row = features_study(), np.array([folds[p] for p in data.problem])
    out = {}
    for method in judges:
        point = {k: round(v, 4) for k, v in study.metrics(method.scores, data.labels).items()}
        bootstrap = study.bootstrap(method.scores, data.labels, data.problem, 1000)
        out[method.name] = {**point, "ci95": {k: [round(v, 4) for v in lh] for k, lh in bootstrap.items()}}
        out[method.name]["roc_auc_per_fold"] = fold_aucs(method.scores, data.labels, fold_of_row)
        if method.name in fitted["raw"]:
            raw = roc_auc_score(data.labels, fitted["raw"][method.name])
            out[method.name]["roc_auc_pooled_uncalibrated"] = round(float(raw), 4)
    return out


def compact_json(payload: dict) -> str:
    """Indented JSON with every list of scalars on one line (the per-problem and per-mismatch data)."""
    text = json.dumps(payload, indent=1)
    return (
        re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + re.sub(r"\s*\n\s*", " ", m[1]) + "]", text) + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", required=True)
    parser.add_argument("--records", type=Path, nargs="+", required=True, help="mined shard folders")
    parser.add_argument("--target", type=Path, required=True)
    parser.add_argument("--windows", type=int, nargs="+", default=[8], help="the first is the headline")
    parser.add_argument("--c-grid", type=float, nargs="+", help="instead of params.yaml train.c_grid")
    parser.add_argument("--inner", type=int, help="inner folds instead of params.yaml train.folds")
    parser.add_argument("--seed", type=int, default=0, help="outer folds and bootstraps")
    parser.add_argument("--samples", type=int, default=2000, help="bootstrap samples of the replayed speed")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--goal", type=float, help="a MAT ratio at the first window the report looks for")
    parser.add_argument("--references", type=Path, help="arith data folder: the target's answers checked")
    parser.add_argument("--only-fold", type=int, help="fit one outer fold, print its timing, write nothing")
    args = parser.parse_args()
    started = time.perf_counter()
    params = load_params(Path("params.yaml"))
    update = {"c_grid": args.c_grid} if args.c_grid else {}
    update |= {"folds": args.inner} if args.inner else {}
    params = params.model_copy(update={"train": params.train.model_copy(update=update)})
    problems = [p for directory in args.records for p in load_shard(directory)]
    data = encode(problems, args.target, args.batch_size)
    encoded = time.perf_counter() - started
    print(f"features: {len(data.labels)} mismatches x {data.spec.dimension} ({encoded:.0f} s)", flush=True)
    folds = outer_folds(problems, args.seed)
    fitted, fold_report = cross_fit(params, data, folds, args.only_fold)
    if args.only_fold is not None:
        return
    judges = methods(data, fitted, folds)
    correct = target_correct(problems, args.references)
    speed = evaluate_methods(
        problems, data.keys(), judges, folds, args.windows, args.samples, args.seed, correct
    )
    context = params.train.context
    index = {p.id: i for i, p in enumerate(problems)}
    result = {
        "name": args.name,
        "references": None if args.references is None else str(args.references),
        "command": " ".join(["python results/context-head/context_head.py", *sys.argv[1:]]),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "processor": processor_name(),
        "records": [str(r) for r in args.records],
        "target": str(args.target),
        "data": {
            "problems": len(problems),
            "mismatches": len(data.labels),
            "important": int(data.labels.sum()),
            "target_argmax_is_recorded_target_token": data.argmax_is_target,
            "target_correct": None if correct is None else sum(correct),
            "dimensions": {g: data.spec.group_width(g) for g in data.spec.groups},
        },
        "settings": {
            "outer_folds": OUTER_FOLDS,
            "seed": args.seed,
            "c_grid": list(params.train.c_grid),
            "inner_folds": params.train.folds,
            "validation_fraction": params.train.validation_fraction,
            "target_recall": params.train.target_recall,
            "context_candidates": [list(g) for g in context.groups],
            "important_weights": list(context.important_weights),
            "budgets": list(BUDGETS),
            "ranking_bootstrap": {"samples": 1000, "seed": 0},
            "speed_bootstrap": {"samples": args.samples, "seed": args.seed},
        },
        "goal": None if args.goal is None else {"window": args.windows[0], "ratio": args.goal},
        "folds": fold_report,
        "ranking": rank(judges, data, fitted, folds),
        **speed,
        "per_mismatch": {
            "problem": [index[p] for p in data.problem],  # index into per_problem's ids
            "position": [row.position for row in data.states.rows],
            "important": data.labels.tolist(),
            "scores": {m.name: np.round(m.scores, 6).tolist() for m in judges},  # heads: recalibrated (platt)
        },
        "seconds": {"features": round(encoded, 1), "all": round(time.perf_counter() - started, 1)},
    }
    write_text(OUT / f"{args.name}.json", compact_json(result))
    with atomic_path(OUT / f"{args.name}.md") as temporary:
        temporary.write_text(markdown(result))
    plot(result, OUT / f"{args.name}.png")


if __name__ == "__main__":
    main()
