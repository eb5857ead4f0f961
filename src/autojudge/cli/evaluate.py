"""``autojudge eval`` (decode a split with a rule, with intervals) and ``autojudge interval`` (recompute
one from its stored figures)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from autojudge.cli.options import ParamsOption
from autojudge.io import write_json

EVAL_RULES = (
    "exact, topk, judge, selfjudge, fsd-js, fsd-kl, fsd-tv (match-or FSD), fsd-js-published, "
    "fsd-kl-published, fsd-tv-published, kl-mask, target-entropy, draft-entropy, fly"
)


def evaluate_command(
    task_name: Annotated[
        str | None, typer.Option("--task", help="Task name (default: params task.name).")
    ] = None,
    split: Annotated[str, typer.Option(help="Split to evaluate.")] = "test",
    rule: Annotated[
        str, typer.Option(help=f"Acceptance rule ({EVAL_RULES}); 'target' or 'draft' decode one model.")
    ] = "exact",
    window: Annotated[
        int | None, typer.Option(min=1, help="Draft window W (default: params evaluate.window).")
    ] = None,
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
    from autojudge.params import load_params
    from autojudge.tasks import get_task

    settings = load_params(params)  # bad params, data or rules stop here, before the model stack imports
    task_name = task_name or settings.task.name
    window = window or settings.evaluate.window
    data_dir = settings.task.data_dir if task_name == settings.task.name else Path("data") / task_name
    task = get_task(task_name, data_dir)
    examples = task.load_split(split, limit)
    config = judge = None
    if rule not in ("target", "draft"):
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
        judge = _judge_head(config, head)  # before the models load: a missing head stops at once
    from autojudge.decoding.batched import BatchedDecoder, Request
    from autojudge.evaluation.scoring import score, summary_intervals
    from autojudge.models.prompts import encode_prompt
    from autojudge.models.runtime import pair_from

    pair = pair_from(settings)
    if config is None:
        acceptance, method = None, f"{rule} greedy"
        models = (pair.target if rule == "target" else pair.draft, None)
    else:
        acceptance = _acceptance_rule(config, window, pair, head, judge)
        method, models = f"sd {acceptance.describe()} W={window}", (pair.target, pair.draft)
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
        decoder = BatchedDecoder(
            *models,
            pair.vocab_size,
            pair.eos_token_ids,
            window,
            settings.decoding.max_new_tokens,
            settings.decoding.batch_size,
            role="draft" if rule == "draft" else "target",
        )
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
    from autojudge.evaluation.figures import problem_figures
    from autojudge.evaluation.scoring import score
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


def _judge_head(config, head: str | None):
    """The head a rule needs (None for a rule that needs none): from ``--head``, a file or an MLflow URI."""
    from autojudge.errors import InputError
    from autojudge.tracking.heads import resolve_head

    if not config.needs_head:
        return None
    if head is None:
        raise InputError(f"--rule {config.rule} needs --head (a head file or models:/<name>@<alias>)")
    return resolve_head(head)


def _acceptance_rule(config, window: int, pair, head: str | None, judge):
    """The speculative decoding rule named on the command line; its head (``judge``) must fit the pair."""
    from autojudge.errors import ModelPairError
    from autojudge.models.tokenizer import tokenizer_hash
    from autojudge.rules.build import build_rule

    if judge is not None:
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
