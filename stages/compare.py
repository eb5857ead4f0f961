"""DVC stage compare: every acceptance rule and judge head of a task under one protocol (points chosen on
validation, decoded on each split of compare.splits), with intervals and a verdict, against the ceiling of
a perfect judge on compare.ceiling_problems mined validation problems (kept under --kept). The SelfJudge
head is the primary task's (params: task) only; the context head (train.context) sits in the AutoJudge
head's folder, under context/."""

from pathlib import Path

from autojudge.evaluation.comparison import markdown
from autojudge.evaluation.comparison_decode import compare_methods
from autojudge.evaluation.report import plot_accuracy_vs_mat
from autojudge.evaluation.serving import head_locations, recommendations
from autojudge.heads.artifact import context_head_file
from autojudge.io import write_json, write_text
from autojudge.orchestration.stage import run_stage, stage_arguments
from autojudge.params import load_params


def compare(params, args) -> None:
    primary = load_params(args.params).task.name == params.task.name
    # absent: selfjudge.enabled false
    selfjudge = args.selfjudge_head if primary and args.selfjudge_head.is_file() else None
    context = context_head_file(args.head)  # absent: train.context.enabled false
    context = context if params.train.context.enabled and context.is_file() else None
    result, rows = compare_methods(params, args.head, selfjudge, args.kept, context)
    heads = {"judge": args.head, "judge-context": context, "selfjudge": selfjudge}
    files = {method: path for method, path in heads.items() if path is not None}
    result["serving"] = recommendations(result, params, head_locations(files, files))
    for split, split_rows in rows.items():
        title = f"{params.task.name} / {params.pair.name}: {split} split, W={params.compare.window}"
        plot_accuracy_vs_mat(args.plots / "compare" / f"{split}.png", split_rows, title)
    write_json(args.metrics, result)
    write_text(args.plots / "compare.md", markdown(result) + "\n")
    print(markdown(result))


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--head", type=Path, default=Path("heads/head.safetensors"))
    parser.add_argument("--selfjudge-head", type=Path, default=Path("selfjudge/head/head.safetensors"))
    parser.add_argument("--metrics", type=Path, default=Path("metrics/compare.json"))
    parser.add_argument("--plots", type=Path, default=Path("plots"))
    parser.add_argument("--kept", type=Path, help="keep every decode here; a rerun reads them back")
    run_stage("compare", compare, parser)
