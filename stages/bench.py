"""DVC stage bench: tokens/s with vLLM for target alone, SD exact, AutoJudge and the comparison's recommended
rules at their chosen points, with energy and judge overhead."""

from pathlib import Path

from autojudge.bench.vllm_bench import run_benchmark
from autojudge.bench.vllm_report import write_outputs
from autojudge.io import read_json
from autojudge.orchestration.stage import run_stage, stage_arguments


def bench(params, args) -> None:
    comparison = read_json(args.comparison) if args.comparison else None
    report = run_benchmark(params, args.head, comparison)
    write_outputs(report, args.metrics, args.plots / "bench_tokens_per_s", args.plots / "bench.md")
    print((args.plots / "bench.md").read_text())


if __name__ == "__main__":
    parser = stage_arguments(__doc__)
    parser.add_argument("--head", type=Path, default=Path("heads/head.safetensors"))
    parser.add_argument("--comparison", type=Path, help="compare.json: its recommendations are timed too")
    parser.add_argument("--metrics", type=Path, default=Path("metrics/bench.json"))
    parser.add_argument("--plots", type=Path, default=Path("plots"))
    run_stage("bench", bench, parser)
