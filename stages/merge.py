"""DVC stage merge: the shards' results as one Parquet data set, and mining metrics."""

from pathlib import Path

from autojudge.io import write_json
from autojudge.mining.dataset import mined_rows, write_parquet
from autojudge.mining.shards import merge_shards
from autojudge.orchestration.stage import run_stage, stage_arguments


def merge(params, args) -> None:
    shards = [args.shards / str(index) for index in params.mining.shards]
    problems, summary = merge_shards(shards)
    write_parquet(args.out, mined_rows(problems))
    write_json(args.metrics, summary)
    print(summary)


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--shards", type=Path, default=Path("mining/shards"))
    parser.add_argument("--out", type=Path, default=Path("mining/mined.parquet"))
    parser.add_argument("--metrics", type=Path, default=Path("metrics/mining.json"))
    run_stage("merge", merge, parser)
