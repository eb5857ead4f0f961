"""DVC stage features: each mined draft token's feature groups (the hidden state reading it for the paper's
head; with train.context, the context head's candidates too: the state that predicted its slot, the free
rules' scores there, token classes)."""

from pathlib import Path

from autojudge.features.groups import token_class_table
from autojudge.features.hidden_states import extract_features
from autojudge.features.spec import PAPER_GROUPS, FeatureSpec, ordered_groups
from autojudge.features.store import write_features
from autojudge.mining.dataset import COLUMNS, problems_from_rows, read_parquet
from autojudge.models.runtime import pair_from
from autojudge.orchestration.stage import run_stage, stage_arguments


def features(params, args) -> None:
    problems = problems_from_rows(read_parquet(args.mined, COLUMNS))
    pair = pair_from(params, dtype=params.features.dtype)
    context = params.train.context
    groups = ordered_groups(PAPER_GROUPS, *(context.groups if context.enabled else []))
    hidden = pair.target.config.hidden_size, pair.draft.config.hidden_size
    spec = FeatureSpec(params.features.source, *hidden, groups)
    classes = token_class_table(pair.tokenizer) if "token_classes" in groups else None
    matrix, rows = extract_features(
        pair.target, pair.draft, problems, spec, pair.pad_token_id, params.features.batch_size, classes,
        pair.vocab_size,
    )  # fmt: skip
    write_features(args.out, matrix, rows, spec)
    print(
        f"{len(rows)} mismatches x {spec.dimension} features ({spec.source}: {', '.join(groups)}) -> {args.out}"
    )


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--mined", type=Path, default=Path("mining/mined.parquet"))
    parser.add_argument("--out", type=Path, default=Path("features"))
    run_stage("features", features, parser)
