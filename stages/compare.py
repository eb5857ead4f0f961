"""DVC stage compare: every acceptance rule and judge head, accuracy vs MAT on each split of compare.splits."""

from pathlib import Path

from autojudge.comparison import budget_key, comparison_settings, decision, markdown, split_table
from autojudge.heads.artifact import load_head
from autojudge.heads.out_of_fold import fold_heads_for
from autojudge.io import write_json, write_text
from autojudge.report import plot_accuracy_vs_mat
from autojudge.stage import run_stage, stage_arguments
from autojudge.sweep import run_settings, summary_row


def compare(params, args) -> None:
    settings = params.compare
    heads = {"judge": load_head(args.head)}
    more_heads = {}
    if args.selfjudge_head.is_file():  # absent when selfjudge.enabled is false
        heads["selfjudge"] = load_head(args.selfjudge_head)
        more_heads["selfjudge"] = args.selfjudge_head
    sweep = comparison_settings(settings.window, heads, settings.recalls, settings.topk, settings.thresholds)
    budgets = [budget_key(b) for b in settings.budgets]
    result = {
        "limit": settings.limit,
        "window": settings.window,
        "budgets": budgets,
        "splits": {},
        "decisions": {},
    }
    for split in settings.splits:
        folds = fold_heads_for(params, args.head.parent, split)
        outcomes = run_settings(
            params, sweep, split, settings.limit, args.head, settings.workers, more_heads, folds
        )
        rows = [summary_row(setting, summary) for setting, summary, _ in outcomes]
        table = split_table(rows, settings.budgets)
        result["splits"][split] = {**table, "examples": rows[0]["examples"], "settings": rows}
        result["decisions"][split] = decision(table["table"], budgets[0], table["target_accuracy"])
        title = f"{params.task.name} / {params.pair.name}: {split} split, W={settings.window}"
        plot_accuracy_vs_mat(args.plots / "compare" / f"{split}.png", rows, title)
    write_json(args.metrics, result)
    write_text(args.plots / "compare.md", markdown(result) + "\n")
    print(markdown(result))


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--head", type=Path, default=Path("heads/head.safetensors"))
    parser.add_argument("--selfjudge-head", type=Path, default=Path("selfjudge/head/head.safetensors"))
    parser.add_argument("--metrics", type=Path, default=Path("metrics/compare.json"))
    parser.add_argument("--plots", type=Path, default=Path("plots"))
    run_stage("compare", compare, parser)
