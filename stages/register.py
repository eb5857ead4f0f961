"""DVC stage register: the head as an MLflow model version with its card, alias "candidate"."""

from dataclasses import asdict
from pathlib import Path

from autojudge.evaluation.serving import head_locations, recommendations, served_heads
from autojudge.heads.artifact import load_head
from autojudge.io import read_json, write_json
from autojudge.orchestration.stage import run_stage, stage_arguments
from autojudge.params import load_params
from autojudge.registry.card import build_card, card_markdown
from autojudge.registry.promotion import check_gates, register_version
from autojudge.registry.runs import log_model_and_card
from autojudge.tracking.store import model_name


def register(params, args) -> None:
    head = load_head(args.head)
    name = model_name(params.task.name, params.pair.name, params.registry.model_name)
    evaluation = read_json(args.evaluation)
    primary = load_params(args.params).task.name == params.task.name  # benchmarked
    comparison = read_json(args.comparison)
    # the card serves the registered head by its URI and hash (compare.md: by its file)
    registered = head_locations({"judge": f"models:/{name}@{params.registry.alias}"}, {"judge": args.head})
    heads = served_heads(comparison.get("serving", {})) | registered
    comparison["serving"] = recommendations(comparison, params, heads)
    card = build_card(
        params,
        head,
        read_json(args.mining),
        evaluation,
        name,
        comparison,
        read_json(args.bench) if primary else None,
        read_json(args.crossdomain) if args.crossdomain.is_file() else None,
        read_json(args.sampled) if primary else None,
    )
    gates = params.promote
    card["gate_result"] = asdict(
        check_gates(card, gates.max_accuracy_drop, gates.min_mat_gain, gates.temperature)
    )
    markdown = card_markdown(card)
    headline = evaluation["headline"]
    model_uri = log_model_and_card(
        read_json(args.run)["run_id"],
        args.head,
        card,
        markdown,
        {f"eval_{key}": float(value) for key, value in headline.items()},
        [args.plots / "accuracy_vs_mat.png"],
    )
    tags = {
        "pair": params.pair.name,
        "task": params.task.name,
        "threshold": f"{head.threshold:.6g}",
        "mat_gain_vs_exact_sd": f"{headline['mat_gain_vs_exact_sd']:.3f}",
        "accuracy_drop_vs_target": f"{headline['accuracy_drop_vs_target']:.4f}",
    }
    version = register_version(model_uri, name, markdown, tags, params.registry.alias)
    write_json(
        args.out,
        {
            "model_name": name,
            "version": version,
            "alias": params.registry.alias,
            "model_uri": f"models:/{name}/{version}",
        },
    )
    print(f"registered {name} version {version} as '{params.registry.alias}'")


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--head", type=Path, default=Path("heads/head.safetensors"))
    parser.add_argument("--run", type=Path, default=Path("heads/mlflow_run.json"))
    parser.add_argument("--mining", type=Path, default=Path("metrics/mining.json"))
    parser.add_argument("--evaluation", type=Path, default=Path("metrics/evaluate.json"))
    parser.add_argument("--comparison", type=Path, default=Path("metrics/compare.json"))
    parser.add_argument("--bench", type=Path, default=Path("metrics/bench.json"))
    parser.add_argument("--crossdomain", type=Path, default=Path("metrics/crossdomain.json"))
    parser.add_argument("--sampled", type=Path, default=Path("metrics/sampled.json"))
    parser.add_argument("--plots", type=Path, default=Path("plots"))
    parser.add_argument("--out", type=Path, default=Path("registry/registered.json"))
    run_stage("register", register, parser)
