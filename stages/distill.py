"""DVC stage distill: a draft for a real target, its first layers trained on the target's greedy responses."""

from pathlib import Path

from autojudge.errors import InputError
from autojudge.io import write_json
from autojudge.models.distilled_draft import build_draft
from autojudge.stage import run_stage, stage_arguments


def distill(params, args) -> None:
    if args.name not in params.distill:
        raise InputError(f"params distill has no entry {args.name!r} (has {sorted(params.distill)})")
    summary = build_draft(params.distill[args.name], params.pair.chat_template, params.mining.vllm, args.name)
    write_json(args.metrics, summary)
    print(summary)


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--name", required=True, help="the entry of params distill")
    parser.add_argument("--metrics", type=Path, required=True)
    run_stage("distill", distill, parser)
