"""The ``autojudge`` command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from autojudge.cli.finetune import finetune_app
from autojudge.errors import AutoJudgeError
from autojudge.io import write_json

if TYPE_CHECKING:
    from autojudge.params import Params

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Task-specific judge decoding for vLLM.")
toy_app = typer.Typer(
    no_args_is_help=True, help="The toy world: train and measure the toy draft/target pair."
)
bench_app = typer.Typer(no_args_is_help=True, help="Speed benchmarks.")
app.add_typer(toy_app, name="toy")
app.add_typer(bench_app, name="bench")
vllm_app = typer.Typer(no_args_is_help=True, help="The vLLM judge plugin.")
app.add_typer(vllm_app, name="vllm")
app.add_typer(finetune_app, name="finetune")

ParamsOption = Annotated[Path, typer.Option("--params", help="Parameters file.")]


EVAL_RULES = (
    "exact, topk, judge, selfjudge, fsd-js, fsd-kl, fsd-tv (match-or FSD), fsd-js-published, "
    "fsd-kl-published, fsd-tv-published, kl-mask, target-entropy, draft-entropy, fly"
)


@app.command("eval")
def evaluate_command(
    task_name: Annotated[str, typer.Option("--task", help="Task name.")] = "arith",
    split: Annotated[str, typer.Option(help="Split to evaluate.")] = "test",
    rule: Annotated[
        str, typer.Option(help=f"Acceptance rule ({EVAL_RULES}); 'target' or 'draft' decode one model.")
    ] = "exact",
    window: Annotated[int, typer.Option(help="Draft window W.")] = 8,
    top_k: Annotated[int, typer.Option(help="topk: K of the top-K rule.")] = 4,
    head: Annotated[
        str | None,
        typer.Option(help="judge, selfjudge: a head file or an MLflow URI such as models:/name@production."),
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(
            help="judge: p(important) below which a mismatch is accepted (default: the head's); "
            "a training-free rule's threshold (FLy: the entropy threshold)."
        ),
    ] = None,
    confidence: Annotated[
        float | None,
        typer.Option(help="kl-mask: target top-1 p above which verification is exact (default: params)."),
    ] = None,
    fly_window_size: Annotated[
        int | None, typer.Option(help="fly: deferred window (default: params).")
    ] = None,
    fly_entropy_top_k: Annotated[
        int | None, typer.Option(help="fly: entropy top-k (default: params).")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Evaluate only the first N problems.")] = None,
    samples: Annotated[int, typer.Option(help="Bootstrap samples of the 95% intervals.")] = 2000,
    versus_exact: Annotated[
        bool,
        typer.Option(
            help="Also decode exact SD (same window, problems): MAT ratio and accuracy drop, paired intervals."
        ),
    ] = False,
    output: Annotated[Path | None, typer.Option(help="Write the summary as JSON here.")] = None,
    params: ParamsOption = Path("params.yaml"),
) -> None:
    """Decode a split with the reference engine (batched); print accuracy and MAT with 95% bootstrap
    intervals."""
    if versus_exact and rule in ("target", "draft"):
        raise typer.BadParameter(
            "compares a speculative decoding rule with exact SD, not one model", param_hint="--versus-exact"
        )
    from autojudge.decoding.batched import BatchedDecoder, Request
    from autojudge.evaluation.scoring import score, summary_intervals
    from autojudge.models.prompts import encode_prompt
    from autojudge.models.runtime import pair_from
    from autojudge.params import load_params
    from autojudge.tasks import get_task

    settings = load_params(params)
    data_dir = settings.task.data_dir if task_name == settings.task.name else Path("data") / task_name
    task = get_task(task_name, data_dir)
    examples = task.load_split(split, limit)
    pair = pair_from(settings)
    config = None
    if rule in ("target", "draft"):
        acceptance, method = None, f"{rule} greedy"
        models = (pair.target if rule == "target" else pair.draft, None)
    else:
        from autojudge.errors import InputError
        from autojudge.rules.config import RULES, TRAINING_FREE, RuleConfig

        if rule not in RULES:
            raise InputError(f"unknown rule {rule!r}; known: target, draft, {', '.join(RULES)}")
        if rule in TRAINING_FREE and threshold is None:
            raise InputError(f"--rule {rule} needs --threshold")
        compare = settings.compare
        config = RuleConfig(
            rule,
            threshold=threshold,
            top_k=top_k if rule == "topk" else None,
            confidence=compare.confidence if confidence is None else confidence,
            fly_window_size=compare.fly_window_size if fly_window_size is None else fly_window_size,
            fly_entropy_top_k=compare.fly_entropy_top_k if fly_entropy_top_k is None else fly_entropy_top_k,
        )
        acceptance = _acceptance_rule(config, window, pair, head)
        method, models = f"sd {acceptance.describe()} W={window}", (pair.target, pair.draft)
    decoder = BatchedDecoder(
        *models,
        pair.vocab_size,
        pair.eos_token_ids,
        window,
        settings.decoding.max_new_tokens,
        settings.decoding.batch_size,
        role="draft" if rule == "draft" else "target",
    )
    prompts = [
        encode_prompt(pair.tokenizer, task.build_prompt(e), settings.pair.chat_template) for e in examples
    ]

    def generate(acceptance, config, label: str):
        """The prompts decoded by the engine of ``decoding.engine``."""
        if settings.decoding.engine == "vllm":
            from autojudge.evaluation.vllm_sweep import Job, decode_on_vllm

            job = Job(rule if config is None else "speculative", window, config)
            heads = {config.rule: head} if config is not None and config.needs_head else {}
            return decode_on_vllm(settings, [job], prompts, pair.eos_token_ids, heads)[0]
        return decoder.generate([Request(prompt, acceptance) for prompt in prompts], label)

    generations = generate(acceptance, config, method)
    summary, results = score(task, examples, generations, pair.tokenizer, method)
    intervals = summary_intervals(results, samples)
    accuracy = intervals["accuracy"]
    mat = intervals.get("mat")
    mat_text = f"MAT {mat['value']:.3f} [{mat['low']:.3f}, {mat['high']:.3f}]" if mat else "MAT n/a"
    typer.echo(
        f"{method}: accuracy {accuracy['value']:.4f} [{accuracy['low']:.4f}, {accuracy['high']:.4f}] on "
        f"{summary.examples} problems, {mat_text} tokens per target pass, {summary.seconds:.1f} s "
        "(95% bootstrap intervals over problems)"
    )
    report = {**summary.as_dict(), "intervals": intervals}
    if versus_exact:
        report["versus_exact_sd"] = _versus_exact(generate, task, examples, pair, results, window, samples)
    if output is not None:
        write_json(output, report)


def _versus_exact(generate, task, examples, pair, results, window: int, samples: int) -> dict:
    """Exact SD on the same problems: the rule's MAT ratio and accuracy drop, 95% paired-bootstrap intervals."""
    from autojudge.evaluation.comparison import accuracy_drop, mat_ratio
    from autojudge.evaluation.scoring import score
    from autojudge.evaluation.sweep import problem_figures
    from autojudge.rules.acceptance import ExactMatch
    from autojudge.rules.config import RuleConfig

    method = f"sd exact W={window}"
    generations = generate(ExactMatch(), RuleConfig("exact"), method)
    exact = problem_figures(score(task, examples, generations, pair.tokenizer, method)[1])
    decoded = problem_figures(results)
    figures = {
        "mat_ratio": mat_ratio(decoded, exact, samples, 0),
        "accuracy_drop": accuracy_drop(exact, decoded, samples, 0),
    }
    ratio, drop = figures["mat_ratio"], figures["accuracy_drop"]
    typer.echo(
        f"versus exact SD W={window}: MAT {ratio['value']:.3f}x [{ratio['low']:.3f}, {ratio['high']:.3f}], "
        f"accuracy drop {100 * drop['value']:+.1f} points [{100 * drop['low']:+.1f}, {100 * drop['high']:+.1f}]"
    )
    return figures


def _acceptance_rule(config, window: int, pair, head: str | None):
    """The speculative decoding rule named on the command line; a head must fit the pair."""
    from autojudge.errors import InputError, ModelPairError
    from autojudge.models.pair import tokenizer_hash
    from autojudge.rules.build import build_rule
    from autojudge.tracking.heads import resolve_head

    judge = None
    if config.needs_head:
        if head is None:
            raise InputError(f"--rule {config.rule} needs --head (a head file or models:/<name>@<alias>)")
        judge = resolve_head(head)
        try:
            judge.check_models(
                pair.name,
                tokenizer_hash(pair.tokenizer),
                pair.target.config.hidden_size,
                pair.draft.config.hidden_size,
            )
        except ModelPairError as error:
            raise ModelPairError(f"--head {head}: {error}") from None
    return build_rule(config, window, judge)


PresetOption = Annotated[str | None, typer.Option(help="A preset in presets/ merged over the params file.")]


def _toy_settings(params: Path, preset: str | None) -> Params:
    """The params file, with ``preset`` merged in; it must have a 'toy' section."""
    from autojudge.orchestration.presets import merged_params
    from autojudge.params import load_params

    settings = merged_params(params.parent, preset)[1] if preset else load_params(params)
    if settings.toy is None:
        raise AutoJudgeError(f"{params}{' with preset ' + preset if preset else ''}: no 'toy' section")
    return settings


@toy_app.command("train")
def toy_train(
    out: Annotated[Path, typer.Option(help="Directory for the tokenizer and both models.")] = Path(
        "models/toy_mixed"
    ),
    only: Annotated[
        str | None, typer.Option(help="Train only this model (draft: reuses the target's tokenizer in OUT).")
    ] = None,
    params: ParamsOption = Path("params.yaml"),
    preset: PresetOption = None,
) -> None:
    """Train the toy tokenizer, target and draft from the 'toy' params (slow: tens of minutes)."""
    from autojudge.io import read_json
    from autojudge.world.training import train_toy_pair

    settings = _toy_settings(params, preset)
    if only not in (None, "target", "draft"):
        raise AutoJudgeError(f"--only must be target or draft, got {only!r}")
    record_path = out / "training.json"
    record = read_json(record_path) if only and record_path.exists() else {"history": {}}
    histories = train_toy_pair(settings.toy, out, (only,) if only else ("target", "draft"))
    command = (
        "autojudge toy train"
        + (f" --preset {preset}" if preset else "")
        + (f" --only {only}" if only else "")
    )
    record["commands"] = [*record.get("commands", []), command] if only else [command]
    record["toy"] = settings.toy.model_dump(mode="json")
    record["history"] = {**record["history"], **histories}
    write_json(record_path, record)
    typer.echo(f"trained toy pair in {out}")


@toy_app.command("measure")
def toy_measure(
    out: Annotated[
        Path | None,
        typer.Option(help="Where to write the figures (default: quality.json beside the target)."),
    ] = None,
    params: ParamsOption = Path("params.yaml"),
    preset: PresetOption = None,
) -> None:
    """Measure the pair's quality figures (accuracies, agreement) on the test split of every source of the toy
    corpus, and check them against their bounds."""
    from autojudge.models.pair import weights_digest
    from autojudge.models.runtime import pair_from
    from autojudge.world.quality import measure_sources

    settings = _toy_settings(params, preset)
    pair = pair_from(settings)
    sources = measure_sources(pair, settings.toy, settings.decoding.max_new_tokens)
    failures = [
        f"{source}: {failure}" for source, figures in sources.items() for failure in figures["failures"]
    ]
    write_json(
        out or Path(settings.pair.target).parent / "quality.json",
        {
            "command": "autojudge toy measure" + (f" --preset {preset}" if preset else ""),
            "sources": sources,
            "within_bounds": not failures,
            "failures": failures,
            "weights_sha256": {
                "target": weights_digest(settings.pair.target),
                "draft": weights_digest(settings.pair.draft),
            },
        },
    )
    typer.echo(json.dumps(sources, indent=2))
    if failures:
        typer.echo("outside bounds: " + "; ".join(failures), err=True)
        raise typer.Exit(1)


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
    from autojudge.bench.vllm_bench import check_plan, run_benchmark, write_outputs
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


@app.command()
def promote(
    version: Annotated[
        str | None, typer.Option(help="Version to promote (default: the 'candidate').")
    ] = None,
    rollback: Annotated[
        bool, typer.Option("--rollback", help="Restore the previous production version.")
    ] = False,
    task: Annotated[
        str | None, typer.Option(help="The pipeline task whose model to promote (default: params task).")
    ] = None,
    params: ParamsOption = Path("params.yaml"),
) -> None:
    """Move alias 'production' to a head whose card passes the promotion gates (or roll it back)."""
    from autojudge.params import load_params
    from autojudge.registry import promotion as versions
    from autojudge.tracking.store import model_name

    settings = load_params(params, task)
    name = model_name(settings.task.name, settings.pair.name, settings.registry.model_name)
    if rollback:
        typer.echo(f"{name}: production -> version {versions.rollback(name)} (rolled back)")
        return
    chosen, result = versions.promote(
        name, version, settings.promote.max_accuracy_drop, settings.promote.min_mat_gain
    )
    if not result.passed:
        typer.echo(f"{name} version {chosen} not promoted:", err=True)
        for reason in result.reasons:
            typer.echo(f"  - {reason}", err=True)
        raise typer.Exit(1)
    typer.echo(f"{name}: production -> version {chosen}")


@app.command()
def preset(
    name: Annotated[str, typer.Argument(help="Preset in presets/ (e.g. gsm8k-llama), or 'toy'.")],
    root: Annotated[Path, typer.Option(help="Project directory holding params.yaml and presets/.")] = Path(),
) -> None:
    """Merge a pair preset into params.yaml (validated first), ready for `dvc repro`."""
    from autojudge.orchestration.presets import apply_preset, merged_params

    apply_preset(root, name)
    _, settings = merged_params(root, "toy")
    typer.echo(
        f"params.yaml: task {settings.task.name}, pair {settings.pair.name} "
        f"({settings.pair.draft} -> {settings.pair.target}, {settings.pair.dtype} on {settings.pair.device})"
    )


@vllm_app.command("check")
def vllm_check(
    params: ParamsOption = Path("params.yaml"),
    window: Annotated[
        int | None, typer.Option(help="Draft tokens per step (default decoding.window).")
    ] = None,
) -> None:
    """Print the installed vLLM, the model runner the pair's engine would use, and every hook point."""
    from autojudge.params import load_params
    from autojudge.vllm_plugin.compat import engine_report

    settings = load_params(params)
    report = engine_report(
        str(settings.pair.target),
        str(settings.pair.draft),
        window or settings.decoding.window,
        settings.mining.vllm.max_model_len,
        settings.mining.vllm.engine_kwargs,
    )
    typer.echo(
        f"vLLM: {report['vllm']} (plugin tested on {report['supported']}), platform {report['platform']}"
    )
    typer.echo(f"model runner for {settings.pair.target} + {settings.pair.draft}: {report['runner']}")
    for name, problem in report["hooks"].items():
        typer.echo(f"  ok       {name}" if problem is None else f"  MISSING  {name}: {problem}")
    if report["problems"]:
        typer.echo("an engine enabling the plugin would NOT start: " + "; ".join(report["problems"]))
        raise typer.Exit(1)
    typer.echo("an engine enabling the plugin would start")


@app.command()
def interval(
    file: Annotated[
        Path, typer.Option(help="A compare.json or crossdomain.json holding per-problem figures.")
    ] = Path("metrics/arith/compare.json"),
    split: Annotated[
        str, typer.Option(help="Split (compare: validation or a test split; crossdomain: task:split).")
    ] = "test",
    a: Annotated[str | None, typer.Option("--a", help="Setting A (e.g. 'target alone').")] = None,
    b: Annotated[str | None, typer.Option("--b", help="Setting B (e.g. 'exact SD W=32').")] = None,
    statistic: Annotated[
        str, typer.Option(help="accuracy-drop: accuracy of A minus B; mat-ratio: MAT of A over B.")
    ] = "mat-ratio",
    list_settings: Annotated[
        bool, typer.Option("--list", help="Print the setting names decoded on --split, then stop.")
    ] = False,
) -> None:
    """Recompute an interval of a comparison or cross-domain file from its per-problem figures alone."""
    from autojudge.evaluation.intervals import load_stored, recompute

    stored = load_stored(file)
    if list_settings:
        for name in stored.settings(split):
            typer.echo(name)
        return
    if a is None or b is None:
        known = "; ".join(stored.settings(split))
        raise typer.BadParameter(f"name both settings; on split {split!r}: {known}", param_hint="--a/--b")
    result = recompute(stored, split, a, b, statistic)
    typer.echo(
        f"{statistic} of {a!r} vs {b!r} on {split} ({stored.samples} bootstrap samples, seed "
        f"{stored.seed}): {result['value']:.6g} [95% CI {result['low']:.6g}, {result['high']:.6g}]"
    )
    typer.echo(json.dumps(result))


def main() -> None:
    """Entry point: user errors print one clear line and exit with status 2."""
    try:
        app()
    except AutoJudgeError as error:
        typer.echo(f"error: {error}", err=True)
        raise SystemExit(2) from None
