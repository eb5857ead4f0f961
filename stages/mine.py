"""DVC stage mine: Algorithm 1 over one shard of the mining split (resumable)."""

from pathlib import Path

from autojudge.mining.run import mine_from_params
from autojudge.orchestration.stage import run_stage, stage_arguments


def mine(params, args) -> None:
    summary = mine_from_params(params, args.shard, args.out / str(args.shard))
    print(f"shard {args.shard}: {summary.as_dict()}")


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--shard", type=int, required=True, help="shard index")
    parser.add_argument(
        "--out", type=Path, default=Path("mining/shards"), help="directory of shard directories"
    )
    run_stage("mine", mine, parser)
