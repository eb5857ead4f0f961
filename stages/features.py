"""DVC stage features: float32 hidden states encoding each mined draft token."""

from pathlib import Path

from autojudge.features.hidden_states import extract_features
from autojudge.features.spec import FeatureSpec
from autojudge.features.store import write_features
from autojudge.mining.dataset import COLUMNS, problems_from_rows, read_parquet
from autojudge.models.runtime import pair_from
from autojudge.orchestration.stage import run_stage, stage_arguments


def features(params, args) -> None:
    problems = problems_from_rows(read_parquet(args.mined, COLUMNS))
    pair = pair_from(params, dtype=params.features.dtype)
    spec = FeatureSpec(params.features.source, pair.target.config.hidden_size, pair.draft.config.hidden_size)
    matrix, rows = extract_features(
        pair.target, pair.draft, problems, spec, pair.pad_token_id, params.features.batch_size
    )
    write_features(args.out, matrix, rows, spec)
    print(f"{len(rows)} mismatches x {spec.dimension} features ({spec.source}) -> {args.out}")


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--mined", type=Path, default=Path("mining/mined.parquet"))
    parser.add_argument("--out", type=Path, default=Path("features"))
    run_stage("features", features, parser)
