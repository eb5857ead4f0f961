"""DVC stage relabel: SelfJudge labels (semantic preservation under the target) and their feature rows.

selfjudge.candidates: ``mined`` relabels AutoJudge's mined mismatches; ``responses`` is checker-free:
every draft mismatch in the target's greedy responses to the mining split's prompts.
"""

import time
from pathlib import Path

from autojudge.io import write_json
from autojudge.mining.dataset import COLUMNS, read_parquet
from autojudge.models.runtime import pair_from
from autojudge.orchestration.stage import run_stage, stage_arguments
from autojudge.selfjudge import DISABLED
from autojudge.selfjudge.checker_free import relabel_checker_free, write_response_features
from autojudge.selfjudge.relabel import (
    first_problems,
    relabel,
    summary,
    target_backends,
    write_relabeled_features,
)


def relabel_stage(params, args) -> None:
    settings = params.selfjudge
    if not settings.enabled:
        args.out.mkdir(parents=True, exist_ok=True)
        write_json(args.out / DISABLED, {"enabled": False})
        write_json(args.metrics, {"enabled": False})
        print("selfjudge.enabled is false: nothing relabeled")
        return
    started = time.perf_counter()
    mined = list(read_parquet(args.mined, COLUMNS))
    pair = pair_from(params, dtype=params.features.dtype)
    engine, scorer = target_backends(params, pair)
    try:
        if settings.candidates == "mined":
            rows = first_problems(mined, settings.problems)
            relabeled = relabel(params, rows, engine, scorer, pair.eos_token_ids)
        else:
            relabeled, rows = relabel_checker_free(params, pair, mined, engine, scorer)
    finally:
        engine.close()
    if settings.candidates == "mined":
        written = write_relabeled_features(args.features, args.out, relabeled)
    else:
        written = write_response_features(params, pair, args.out, relabeled, rows)
    figures = {"enabled": True, "candidates": settings.candidates, "engine": settings.engine}
    figures |= summary(relabeled) | {"rows_written": written}
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
