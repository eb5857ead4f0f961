"""DVC stage relabel: SelfJudge labels for the mined mismatches (semantic preservation under the target)."""

import time
from pathlib import Path

from autojudge.io import write_json
from autojudge.mining.dataset import COLUMNS, read_parquet
from autojudge.runtime import pair_from
from autojudge.selfjudge.relabel import (
    first_problems,
    relabel,
    summary,
    target_backends,
    write_relabeled_features,
)
from autojudge.stage import run_stage, stage_arguments

DISABLED = "disabled.json"


def relabel_stage(params, args) -> None:
    if not params.selfjudge.enabled:
        args.out.mkdir(parents=True, exist_ok=True)
        write_json(args.out / DISABLED, {"enabled": False})
        write_json(args.metrics, {"enabled": False})
        print("selfjudge.enabled is false: nothing relabeled")
        return
    started = time.perf_counter()
    rows = first_problems(list(read_parquet(args.mined, COLUMNS)), params.selfjudge.problems)
    pair = pair_from(params)
    engine, scorer = target_backends(params, pair)
    try:
        relabeled = relabel(params, rows, engine, scorer, pair.eos_token_ids)
    finally:
        engine.close()
    written = write_relabeled_features(args.features, args.out, relabeled)
    figures = {"enabled": True, "engine": params.selfjudge.engine, **summary(relabeled)}
    figures["rows_written"] = written
    figures["seconds"] = round(time.perf_counter() - started, 1)
    write_json(args.metrics, figures)
    print(figures)


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--mined", type=Path, default=Path("mining/mined.parquet"))
    parser.add_argument("--features", type=Path, default=Path("features"))
    parser.add_argument("--out", type=Path, default=Path("selfjudge/features"))
    parser.add_argument("--metrics", type=Path, default=Path("metrics/selfjudge.json"))
    run_stage("relabel", relabel_stage, parser)
