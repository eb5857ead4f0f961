"""DVC stage train: logistic-regression judge head, grid-searched C, recall-targeted threshold
(and, under the out-of-fold protocol, one head per fold)."""

from dataclasses import replace
from pathlib import Path

import torch

from autojudge.evaluation.calibration import calibrate_threshold
from autojudge.evaluation.report import write_csv
from autojudge.features.store import read_features
from autojudge.heads.artifact import JudgeHead
from autojudge.heads.out_of_fold import FOLDS_DIR, fit_fold_heads
from autojudge.heads.training import HeadFit, fit_head
from autojudge.io import write_json
from autojudge.models.pair import load_tokenizer, tokenizer_hash
from autojudge.models.runtime import task_from
from autojudge.orchestration.stage import run_stage, stage_arguments
from autojudge.registry.runs import log_training_run
from autojudge.tracking.store import model_name


def fitted_head(params, features, labels, groups, spec, recalls) -> tuple[HeadFit, JudgeHead]:
    """The grid-searched head on these rows, with its thresholds for ``recalls`` and training facts."""
    settings = params.train
    fit = fit_head(
        features,
        labels,
        groups,
        settings.c_grid,
        settings.target_recall,
        settings.validation_fraction,
        settings.folds,
        settings.seed,
        recalls,
    )
    info = {
        "best_c": fit.best_c,
        "cv_auc_by_c": {str(c): auc for c, auc in fit.cv_auc_by_c.items()},
        "validation_auc": fit.validation_auc,
        "validation_recall": fit.validation_recall,
        "validation_accept_rate": fit.validation_accept_rate,
        "thresholds_by_recall": {str(r): t for r, t in fit.thresholds_by_recall.items()},
        "rows": {"train": fit.train_rows, "validation": fit.validation_rows},
        "important_fraction": float(labels.mean()),
    }
    head = JudgeHead(
        torch.from_numpy(fit.weight),
        fit.bias,
        fit.threshold,
        spec,
        params.pair.name,
        params.task.name,
        tokenizer_hash(load_tokenizer(params.pair.target, "target")),
        info,
    )
    return fit, head


def train_fold_heads(params, features, labels, groups, spec, out: Path) -> None:
    """Out-of-fold protocol: one head per fold of the mined split, trained without that fold's problems."""
    recalls = (1.0, *params.evaluate.recalls, params.train.target_recall)
    problem_ids = [example.id for example in task_from(params).load_split(params.mining.split)]

    def fit(rows):
        return fitted_head(params, features[rows], labels[rows], groups[rows], spec, recalls)[1]

    folds = params.train.out_of_fold_folds
    fit_fold_heads(features, groups, problem_ids, folds, params.train.seed, fit, out / FOLDS_DIR)
    print(f"out of fold: {folds} heads, each trained without one fold of split {params.mining.split!r}")


def train(params, args) -> None:
    features, labels, groups, spec = read_features(args.features)
    settings = params.train
    fit, head = fitted_head(params, features, labels, groups, spec, (1.0, *params.evaluate.recalls))
    info = head.info
    head_path = head.save(args.out / "head.safetensors")
    if settings.threshold_policy == "accuracy" and args.calibrate:
        threshold, calibration = calibrate_threshold(
            params, head_path, fit.thresholds_by_recall[1.0], fit.threshold
        )
        head = replace(head, threshold=threshold, info={**info, "calibration": calibration})
        head_path = head.save(head_path)
    write_csv(
        args.plots / "roc.csv",
        [{"fpr": f, "tpr": t} for f, t in zip(fit.roc["fpr"], fit.roc["tpr"], strict=True)],
    )
    metrics = {
        "validation_auc": fit.validation_auc,
        "best_c": fit.best_c,
        "threshold": head.threshold,
        "validation_recall": fit.validation_recall,
        "validation_accept_rate": fit.validation_accept_rate,
        **{f"cv_auc_c_{c:g}": auc for c, auc in fit.cv_auc_by_c.items()},
    }
    write_json(args.metrics, metrics)
    run_id = log_training_run(
        model_name(params.task.name, params.pair.name, params.registry.model_name),
        {
            "train": settings.model_dump(),
            "features": params.features.model_dump(),
            "mining": params.mining.model_dump(mode="json"),
        },
        metrics,
        [head_path, args.plots / "roc.csv"],
    )
    write_json(args.out / "mlflow_run.json", {"run_id": run_id})
    if settings.protocol == "out_of_fold":
        train_fold_heads(params, features, labels, groups, spec, args.out)
    print(metrics)


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--features", type=Path, default=Path("features"))
    parser.add_argument("--out", type=Path, default=Path("heads"))
    parser.add_argument("--metrics", type=Path, default=Path("metrics/train.json"))
    parser.add_argument("--plots", type=Path, default=Path("plots"))
    parser.add_argument(
        "--no-calibration", dest="calibrate", action="store_false", help="Keep the recall threshold."
    )
    run_stage("train", train, parser)
