"""``autojudge bench``: speed benchmarks (reference engines, vLLM with the plugin, mining, energy)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from autojudge.cli.options import ParamsOption
from autojudge.io import write_json

bench_app = typer.Typer(no_args_is_help=True, help="Speed benchmarks.")


@bench_app.command("reference")
def bench_reference(
    split: Annotated[str, typer.Option(help="Split to decode.")] = "test",
    window: Annotated[list[int], typer.Option(help="Draft windows to run (repeatable).")] = [4, 8],  # noqa: B006
    repeats: Annotated[int, typer.Option(help="Repeats; medians are reported.")] = 3,
    limit: Annotated[int | None, typer.Option(help="Only the first N problems.")] = None,
    out: Annotated[Path, typer.Option(help="Results file.")] = Path("results/reference_sd_bench.json"),
    params: ParamsOption = Path("params.yaml"),
) -> None:
    """Reference SD (exact) wall time vs target-only greedy on the same problems, as a ratio."""
    import torch

    from autojudge.bench.reference import benchmark_reference_sd
    from autojudge.models.runtime import pair_from
    from autojudge.params import load_params
    from autojudge.tasks import get_task

    settings = load_params(params)
    if settings.toy is not None:
        torch.set_num_threads(settings.toy.threads)
    task = get_task(settings.task.name, settings.task.data_dir)
    pair = pair_from(settings)
    report = benchmark_reference_sd(
        pair, task, task.load_split(split, limit), window, settings.decoding.max_new_tokens, repeats
    )
    report["command"] = (
        "autojudge bench reference "
        + " ".join(f"--window {w}" for w in window)
        + (f" --repeats {repeats}" + (f" --limit {limit}" if limit else ""))
    )
    write_json(out, report)
    for name, figures in report["methods"].items():
        typer.echo(
            f"{name:>16}: {figures['median_seconds']:8.2f} s  ratio vs target {figures['wall_time_ratio_vs_target']:.3f}"
            f"  MAT {figures['mat']:.2f}  accuracy {figures['accuracy']:.3f}"
        )


@bench_app.command("engines")
def bench_engines(
    split: Annotated[str, typer.Option(help="Split to decode.")] = "validation",
    limit: Annotated[int, typer.Option(help="The first N problems.")] = 40,
    head: Annotated[
        Path | None, typer.Option(help="The AutoJudge head, if present (default heads/<task>/).")
    ] = None,
    selfjudge_head: Annotated[Path, typer.Option(help="The SelfJudge head, if present.")] = Path(
        "selfjudge/head/head.safetensors"
    ),
    out: Annotated[Path, typer.Option(help="Results file.")] = Path("results/evaluation_engines.json"),
    params: ParamsOption = Path("params.yaml"),
) -> None:
    """The reference engine vs vLLM with the plugin on the comparison's sweep (its candidate grid, exact
    SD, target greedy) on the same problems: wall time of each and how often their tokens agree."""
    from datetime import date

    from autojudge.bench.engines import compare_engines
    from autojudge.evaluation.grids import candidate_grid
    from autojudge.evaluation.setting import Setting
    from autojudge.heads.artifact import load_head
    from autojudge.params import load_params

    settings = load_params(params)
    candidates = {
        "judge": head or Path("heads") / settings.task.name / "head.safetensors",
        "selfjudge": selfjudge_head,
    }
    files = {method: path for method, path in candidates.items() if path.is_file()}  # the heads there are
    grid = candidate_grid(settings, {method: load_head(path) for method, path in files.items()})
    window = settings.compare.window
    sweep = [*grid, Setting("exact", window), Setting("target")]
    report = compare_engines(settings, sweep, split, limit, files)
    report["command"] = f"autojudge bench engines --split {split} --limit {limit}"
    report["date"] = date.today().isoformat()
    write_json(out, report)
    for row in report["settings"]:
        typer.echo(f"{row['setting']:>32}: identical {row['identical_share']:.2f}")
    typer.echo(f"seconds {report['seconds']}; lossless identical: {report['lossless_identical']}")


@bench_app.command("batched")
def bench_batched(
    split: Annotated[str, typer.Option(help="Split to decode.")] = "test",
    limit: Annotated[int, typer.Option(help="The first N problems.")] = 40,
    repeats: Annotated[int, typer.Option(help="Repeats; medians are reported.")] = 3,
    out: Annotated[Path, typer.Option(help="Results file.")] = Path("results/batched_engine_bench.json"),
    params: ParamsOption = Path("params.yaml"),
) -> None:
    """The batched reference engine vs the one-sequence engine on a compare-like sweep: exact SD and every
    rule of compare.methods at its candidate for half the validation mismatches, on the same problems."""
    import torch

    from autojudge.bench.batched import benchmark_batched_engine
    from autojudge.decoding.batched import Request
    from autojudge.evaluation.grids import candidate_grid
    from autojudge.evaluation.sweep import Setting
    from autojudge.models.prompts import encode_prompt
    from autojudge.models.runtime import pair_from
    from autojudge.params import load_params
    from autojudge.rules.build import build_rule
    from autojudge.tasks import get_task

    settings = load_params(params)
    if settings.toy is not None:
        torch.set_num_threads(settings.toy.threads)
    task = get_task(settings.task.name, settings.task.data_dir)
    pair = pair_from(settings)
    compare = settings.compare.model_copy(update={"rates": [0.5]})
    grid = candidate_grid(settings.model_copy(update={"compare": compare}), {})
    swept = [Setting("exact", compare.window), *grid]
    rules = [build_rule(setting.rule_config(compare), compare.window) for setting in swept]
    prompts = [
        encode_prompt(pair.tokenizer, task.build_prompt(e), settings.pair.chat_template)
        for e in task.load_split(split, limit)
    ]
    requests = [Request(prompt, rule) for rule in rules for prompt in prompts]
    decoding = settings.decoding
    report = benchmark_batched_engine(
        pair, requests, compare.window, decoding.max_new_tokens, decoding.batch_size, repeats
    )
    report["rules"] = [rule.describe() for rule in rules]
    report["command"] = f"autojudge bench batched --split {split} --limit {limit} --repeats {repeats}"
    write_json(out, report)
    for name, figures in report["engines"].items():
        typer.echo(
            f"{name:>12}: {figures['median_seconds']:8.2f} s  {figures['tokens_per_second']:8.1f} tokens/s"
        )
    typer.echo(f"speed-up {report['speedup']}x, identical {report['identical_outputs_and_passes']}")


@bench_app.command("energy-check")
def bench_energy_check(
    seconds: Annotated[float, typer.Option(help="Seconds of each block (idle, then loaded).")] = 20.0,
    out: Annotated[Path, typer.Option(help="Results file.")] = Path("results/energy_check.json"),
) -> None:
    """On a CUDA machine: NVML's energy counter against integrated nvidia-smi samples, same blocks."""
    from autojudge.bench.energy_check import cross_check

    report = cross_check(seconds)
    report["command"] = f"autojudge bench energy-check --seconds {seconds:g}"
    write_json(out, report)
    for phase, figures in report["phases"].items():
        typer.echo(
            f"{phase}: NVML {figures['nvml']['joules']:.1f} J, nvidia-smi {figures['nvidia_smi']['joules']:.1f} J,"
            f" relative difference {figures['relative_difference']}"
        )


@bench_app.command("vllm")
def bench_vllm(
    head: Annotated[Path, typer.Option(help="Judge head (reads target hidden states).")] = Path(
        "heads/arith/head.safetensors"
    ),
    problems: Annotated[
        int | None, typer.Option(help="Timed problems (default: params bench.problems).")
    ] = None,
    accuracy_problems: Annotated[
        int | None,
        typer.Option(help="Problems of the accuracy column (default: params bench.accuracy_problems)."),
    ] = None,
    window: Annotated[
        list[int] | None, typer.Option(help="Window grid (repeatable; default: params).")
    ] = None,
    batch_size: Annotated[
        list[int] | None, typer.Option(help="Batch sizes, 1 among them (repeatable; default: params).")
    ] = None,
    threshold: Annotated[
        list[float] | None, typer.Option(help="AutoJudge thresholds besides the head's (repeatable).")
    ] = None,
    repeats: Annotated[int | None, typer.Option(help="Timed repeats (default: params).")] = None,
    tuning_repeats: Annotated[
        int | None, typer.Option(help="Repeats that only choose the windows (default: params).")
    ] = None,
    out: Annotated[Path, typer.Option(help="Results file (.json; .md, .csv, .png beside it).")] = Path(
        "results/vllm_bench.json"
    ),
    params: ParamsOption = Path("params.yaml"),
) -> None:
    """vLLM tokens/s: target alone, stock SD, plugin exact SD, AutoJudge; intervals, energy, judge overhead."""
    from autojudge.bench.vllm_bench import run_benchmark
    from autojudge.bench.vllm_plan import check_plan
    from autojudge.bench.vllm_report import write_outputs
    from autojudge.params import load_params

    settings = load_params(params)
    given = {
        "problems": problems,
        "accuracy_problems": accuracy_problems,
        "windows": window,
        "batch_sizes": batch_size,
        "thresholds": threshold,
        "repeats": repeats,
        "tuning_repeats": tuning_repeats,
    }
    bench = settings.bench.model_copy(update={k: v for k, v in given.items() if v is not None})
    if window and bench.overhead_window not in window:
        bench = bench.model_copy(update={"overhead_window": max(window)})
    check_plan(bench)  # model_copy does not validate
    report = run_benchmark(settings.model_copy(update={"bench": bench}), head)
    report["command"] = (
        f"autojudge bench vllm --head {head} --problems {bench.problems} "
        f"--accuracy-problems {bench.accuracy_problems} --repeats {bench.repeats} "
        f"--tuning-repeats {bench.tuning_repeats}"
        + "".join(f" --window {w}" for w in bench.windows)
        + "".join(f" --batch-size {b}" for b in bench.batch_sizes)
        + "".join(f" --threshold {t}" for t in bench.thresholds)
        + f" --out {out}"
        + (f" --params {params}" if params != Path("params.yaml") else "")
    )
    write_outputs(report, out, out.with_suffix(""), out.with_suffix(".md"))  # curves: .csv, .png
    typer.echo(out.with_suffix(".md").read_text())


@bench_app.command("mining")
def bench_mining(
    problems: Annotated[
        int, typer.Option(help="Problems of the mining split to mine with each engine.")
    ] = 64,
    out: Annotated[Path, typer.Option(help="Results file.")] = Path("results/mining_bench.json"),
    params: ParamsOption = Path("params.yaml"),
) -> None:
    """Problems/minute of Algorithm 1 with the vllm engine against hf on the same problems."""
    import torch

    from autojudge.bench.mining import benchmark_mining
    from autojudge.engines.hf import HFEngine
    from autojudge.engines.vllm_engine import VllmEngine
    from autojudge.mining.run import mining_problems
    from autojudge.models.runtime import pair_from, task_from
    from autojudge.params import load_params

    settings = load_params(params)
    if settings.toy is not None:
        torch.set_num_threads(settings.toy.threads)
    pair = pair_from(settings)
    mining = settings.mining
    engines = {
        "hf": lambda: HFEngine(pair.target, pair.pad_token_id, pair.eos_token_ids, mining.pool_size),
        "vllm": lambda: VllmEngine(
            settings.pair.target,
            settings.pair.dtype,
            pair.eos_token_ids,
            mining.vllm.max_model_len,
            mining.vllm.tensor_parallel_size,
            engine_kwargs=mining.vllm.engine_kwargs,
            in_process=mining.vllm.in_process,
        ),
    }
    report = benchmark_mining(
        pair,
        task_from(settings),
        mining_problems(settings, pair)[:problems],
        engines,
        mining.pool_size,
        mining.batch_size,
        mining.max_response_tokens,
    )
    report["command"] = f"autojudge bench mining --problems {problems} --out {out}"
    write_json(out, report)
    typer.echo(json.dumps(report, indent=2))
