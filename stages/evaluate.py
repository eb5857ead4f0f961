"""DVC stage evaluate: accuracy vs MAT on the test split for every decoding setting."""

from pathlib import Path

from autojudge.evaluation.report import headline, markdown_table, plot_accuracy_vs_mat, write_curve_csv
from autojudge.evaluation.sweep import Setting, run_settings, summary_row
from autojudge.heads.artifact import load_head
from autojudge.heads.out_of_fold import fold_heads_for
from autojudge.io import write_json, write_text
from autojudge.orchestration.stage import run_stage, stage_arguments


def settings_for(params, head) -> list[Setting]:
    window = params.evaluate.window
    thresholds = {round(t, 6): r for r, t in head.info["thresholds_by_recall"].items()}
    thresholds.setdefault(round(head.threshold, 6), params.train.target_recall)
    judge = [Setting("judge", window, threshold=t, recall=float(r)) for t, r in sorted(thresholds.items())]
    topk = [Setting("topk", window, k=k) for k in params.evaluate.topk]
    alone = [Setting("target")] + ([Setting("draft")] if params.pair.proposer == "draft_model" else [])
    return [*judge, *topk, Setting("exact", window), *alone]  # an EAGLE head decodes nothing alone


def evaluate(params, args) -> None:
    head = load_head(args.head)
    split = params.evaluate.split
    results = run_settings(
        params,
        settings_for(params, head),
        split,
        params.evaluate.limit,
        args.head,
        fold_heads=fold_heads_for(params, args.head.parent, split),
    )
    rows = [summary_row(setting, summary) for setting, summary, _ in results]
    figures = headline(rows, head.threshold)
    summary = {"split": split, "protocol": params.train.protocol, "headline": figures, "settings": rows}
    write_json(args.metrics, summary)
    write_curve_csv(args.plots / "accuracy_vs_mat.csv", rows)
    draft = next((r["accuracy"] for r in rows if r["method"] == "draft"), None)
    title = (
        f"{params.task.name} / {params.pair.name}: {params.evaluate.split} split, W={params.evaluate.window}"
    )
    plot_accuracy_vs_mat(args.plots / "accuracy_vs_mat.png", rows, title, draft)
    write_text(args.plots / "table.md", markdown_table(rows) + "\n")
    print(markdown_table(rows))
    print(figures)


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--head", type=Path, default=Path("heads/head.safetensors"))
    parser.add_argument("--metrics", type=Path, default=Path("metrics/evaluate.json"))
    parser.add_argument("--plots", type=Path, default=Path("plots"))
    run_stage("evaluate", evaluate, parser)
