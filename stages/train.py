"""DVC stage train: logistic-regression judge head, grid-searched C, recall-targeted threshold
(and, under the out-of-fold protocol, one head per fold); with train.context, the context head in
<out>/context (feature groups, weight on important mismatches and C chosen by grouped cross-validation)."""

from dataclasses import replace
from pathlib import Path

from autojudge.evaluation.calibration import calibrate_threshold
from autojudge.evaluation.report import write_csv
from autojudge.features.store import read_features
from autojudge.heads.artifact import HEAD_FILE, context_head_file
from autojudge.heads.fitting import fitted_head, train_fold_heads
from autojudge.io import write_json
from autojudge.models.tokenizer import load_tokenizer, tokenizer_hash
from autojudge.orchestration.stage import run_stage, stage_arguments
from autojudge.registry.runs import log_training_run
from autojudge.tracking.store import model_name


def train(params, args) -> None:
    features, labels, groups, spec = read_features(args.features)
    settings = params.train
    tokenizer = load_tokenizer(params.pair.target, "target")
    tokenizer_digest = tokenizer_hash(tokenizer)
    recalls = (1.0, *params.evaluate.recalls)
    fit, head = fitted_head(params, features, labels, groups, spec, recalls, tokenizer_digest)
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
    context = args.context and settings.context.enabled
    if context and settings.protocol == "held_out":
        metrics |= train_context_head(params, (features, labels, groups, spec), recalls, tokenizer, args.out)
    elif context:
        print("train.context: the context head is trained under the held_out protocol only")
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
        train_fold_heads(params, features, labels, groups, spec, tokenizer_digest, args.out)
    print(metrics)


def train_context_head(params, data, recalls, tokenizer, out: Path) -> dict[str, float]:
    """The context head (``data``: features, labels, problem ids, spec) into ``out``/context; its metrics."""
    from autojudge.features.groups import token_class_table  # torch, as the head's tensors

    features, labels, groups, spec = data
    context = params.train.context
    candidates = tuple(tuple(chosen) for chosen in context.groups)
    table = token_class_table(tokenizer) if "token_classes" in spec.groups else None
    fit, head = fitted_head(
        params, features, labels, groups, spec, recalls, tokenizer_hash(tokenizer), candidates,
        tuple(context.important_weights), table, context.c_grid,
    )  # fmt: skip
    head.save(context_head_file(out / HEAD_FILE))  # its groups and weight: the head's metadata
    print(
        f"context head reads {', '.join(head.features.groups)} (important rows weighted {fit.important_weight:g})"
    )
    return {
        "context_validation_auc": fit.validation_auc,
        "context_threshold": head.threshold,
        "context_validation_recall": fit.validation_recall,
        "context_validation_accept_rate": fit.validation_accept_rate,
        "context_important_weight": fit.important_weight,
        "context_best_c": fit.best_c,
    }


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--features", type=Path, default=Path("features"))
    parser.add_argument("--out", type=Path, default=Path("heads"))
    parser.add_argument("--metrics", type=Path, default=Path("metrics/train.json"))
    parser.add_argument("--plots", type=Path, default=Path("plots"))
    parser.add_argument(
        "--no-calibration", dest="calibrate", action="store_false", help="Keep the recall threshold."
    )
    parser.add_argument(
        "--no-context", dest="context", action="store_false", help="No context head (train.context)."
    )
    run_stage("train", train, parser)
