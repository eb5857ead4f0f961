"""DVC stage crossdomain: every task's head on every domain (task:split) of crossdomain.domains."""

from pathlib import Path

from autojudge.evaluation.crossdomain import markdown
from autojudge.evaluation.crossdomain_decode import cross_domain
from autojudge.io import write_json, write_text
from autojudge.orchestration.stage import run_stage, stage_arguments


def crossdomain(params, args) -> None:
    heads = {task: args.heads / task / "head.safetensors" for task in params.tasks}
    result = cross_domain(params, heads)
    write_json(args.metrics, result)
    write_text(args.out, markdown(result) + "\n")
    print(markdown(result))


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--heads", type=Path, default=Path("heads"), help="directory of heads/<task>/")
    parser.add_argument("--metrics", type=Path, default=Path("metrics/crossdomain.json"))
    parser.add_argument("--out", type=Path, default=Path("plots/crossdomain.md"))
    run_stage("crossdomain", crossdomain, parser)
