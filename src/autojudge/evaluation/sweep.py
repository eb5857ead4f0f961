"""Evaluating many decoding settings on one split: every setting's problems decoded in shared batches.

A setting is plain data (method, rule, threshold). Each (setting, problem) becomes one request of the
batched reference engine with the setting's acceptance rule, so a sweep of many settings costs a few
batched passes per cycle rather than one sequence at a time.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from autojudge.decoding.batched import BatchedDecoder, Request
from autojudge.decoding.generation import Generation, Hook
from autojudge.errors import InputError
from autojudge.evaluation.early_stop import LossLimit
from autojudge.evaluation.figures import ProblemFigures, problem_figures
from autojudge.evaluation.scoring import EvalSummary, ExampleResult, score, summarize
from autojudge.evaluation.setting import ALONE, Setting
from autojudge.evaluation.vllm_sweep import decode_on_vllm, job_of
from autojudge.heads.artifact import JudgeHead, load_head
from autojudge.heads.out_of_fold import FoldHeads, threshold_at
from autojudge.models.pair import ModelPair
from autojudge.models.prompts import encode_prompt
from autojudge.models.runtime import pair_from, task_from
from autojudge.params import Params
from autojudge.rules.acceptance import AcceptanceRule, JudgeRule
from autojudge.rules.build import build_rule
from autojudge.tasks.base import Example


def _rule(setting: Setting, params: Params, heads: dict[str, JudgeHead]) -> AcceptanceRule:
    return build_rule(setting.rule_config(params.compare), setting.window, heads.get(setting.head_key))


def _rules(
    setting: Setting,
    examples: list[Example],
    params: Params,
    heads: dict[str, JudgeHead],
    folds: tuple[FoldHeads, list[JudgeHead]] | None,
) -> list[AcceptanceRule | None]:
    """The rule of each example (None: a model alone); with fold heads, method "judge" uses the head
    trained without the example's fold."""
    if setting.method in ALONE:
        return [None] * len(examples)
    if setting.method != "judge" or folds is None:
        return [_rule(setting, params, heads)] * len(examples)
    fold_heads, loaded = folds
    if setting.rate is not None:  # a grid candidate: every fold head at the threshold of the full head
        rules = [JudgeRule(head, setting.threshold) for head in loaded]
    else:
        rules = [JudgeRule(head, threshold_at(head, setting.recall)) for head in loaded]
    return [rules[fold_heads.fold(e.id)] for e in examples]


def _local_hook(on_finished: Hook, members: list[int]) -> Hook:
    """``on_finished`` (indices of the caller's requests) for a decoder that sees only ``members``."""
    local_of = {index: local for local, index in enumerate(members)}

    def hook(finished: list[tuple[int, Generation]]) -> list[int]:
        dropped = on_finished([(members[local], generation) for local, generation in finished])
        return [local_of[index] for index in dropped if index in local_of]

    return hook


def _decode(
    params: Params,
    pair: ModelPair,
    settings: list[Setting],
    requests: list[Request],
    on_finished: Hook | None,
) -> list[Generation]:
    """Decode the requests of every setting (``len(requests) // len(settings)`` each, in order); what
    shares a batch: the target alone, the draft alone, speculative decoding with one window. Requests
    join problem by problem (every setting's first problem, then every setting's second, ...), so that
    ``on_finished`` (request indices) sees every setting progress at once."""
    per_setting = len(requests) // len(settings)
    groups: dict[tuple[str, int], list[int]] = {}
    for index, setting in enumerate(settings):
        key = (setting.method, 0) if setting.method in ALONE else ("speculative", setting.window)
        groups.setdefault(key, []).extend(range(index * per_setting, (index + 1) * per_setting))
    generations: list[Generation] = [Generation([])] * len(requests)
    for (kind, window), members in groups.items():
        decoder = BatchedDecoder(
            pair.draft if kind == "draft" else pair.target,
            pair.draft if kind == "speculative" else None,
            pair.vocab_size,
            pair.eos_token_ids,
            max(window, 1),
            params.decoding.max_new_tokens,
            params.decoding.batch_size,
            role="draft" if kind == "draft" else "target",
        )
        label = f"{kind} alone" if kind in ALONE else f"{len(members) // per_setting} settings, W={window}"
        members.sort(key=lambda i: (i % per_setting, i))
        hook = on_finished and _local_hook(on_finished, members)
        decoded = decoder.generate([requests[i] for i in members], label, on_finished=hook)
        for index, generation in zip(members, decoded, strict=True):
            generations[index] = generation
    return generations


def decode_settings(
    params: Params,
    pair: ModelPair,
    settings: list[Setting],
    examples: list[Example],
    head_files: dict[str, Path],
    fold_heads: FoldHeads | None = None,
    on_finished: Hook | None = None,
) -> list[Generation]:
    """Every setting's generation of every example, setting after setting, on ``decoding.engine``.

    ``head_files`` maps head methods (judge, selfjudge) to their files; with ``fold_heads`` method "judge"
    decodes each problem with the head trained without its fold (reference engine only). On the reference
    engine all settings' problems are decoded together in batches of ``decoding.batch_size`` rows; on
    ``vllm``, one engine per head and window (:mod:`autojudge.evaluation.vllm_sweep`). ``on_finished``
    sees finished requests (index: setting * len(examples) + example) and may drop others
    (:meth:`BatchedDecoder.generate`; vLLM aborts them).
    """
    task = task_from(params)
    prompts = [
        encode_prompt(pair.tokenizer, task.build_prompt(e), params.pair.chat_template) for e in examples
    ]
    if params.decoding.engine == "vllm":
        if fold_heads:
            raise InputError(
                "decoding.engine vllm: fold heads (train.protocol out_of_fold) need the reference engine"
            )
        jobs = [job_of(setting, params.compare) for setting in settings]
        per_setting = decode_on_vllm(params, jobs, prompts, pair.eos_token_ids, head_files, None, on_finished)
        return [generation for decoded in per_setting for generation in decoded]
    heads = {method: load_head(path) for method, path in head_files.items()}
    folds = fold_heads and (fold_heads, [load_head(path) for path in fold_heads.paths])
    requests = [
        Request(prompt, rule)
        for setting in settings
        for prompt, rule in zip(prompts, _rules(setting, examples, params, heads, folds), strict=True)
    ]
    return _decode(params, pair, settings, requests, on_finished)


def run_settings(
    params: Params,
    settings: list[Setting],
    split: str,
    limit: int | None,
    head_path: Path | None,
    more_heads: dict[str, Path] | None = None,
    fold_heads: FoldHeads | None = None,
    loss_limit: LossLimit | None = None,
) -> list[tuple[Setting, EvalSummary, list[ProblemFigures]]]:
    """Decode the split with every setting (:func:`decode_settings`; ``head_path`` is the head of method
    "judge", ``more_heads`` maps other head methods to their files); returns (setting, summary, figures
    per problem) in order. With ``loss_limit`` (candidates: setting indices), a setting stops once it cannot
    end within the limit's budget and is left out (``loss_limit.stopped``): the reference engine drops its
    requests, vLLM aborts them."""
    pair, task = pair_from(params), task_from(params)
    examples = task.load_split(split, limit)
    files = {**(more_heads or {}), **({"judge": head_path} if head_path is not None else {})}
    count = len(examples)
    scored: dict[int, ExampleResult] = {}  # request index -> its result, scored as it finished

    def stop_hopeless(finished: list[tuple[int, Generation]]) -> list[int]:
        indices = [index for index, _ in finished]
        chosen = [examples[index % count] for index in indices]
        _, results = score(task, chosen, [g for _, g in finished], pair.tokenizer, "early stop")
        scored.update(zip(indices, results, strict=True))
        hopeless = [
            index // count
            for index, result in zip(indices, results, strict=True)
            if loss_limit.add(index // count, index % count, result.correct)
        ]
        return [s * count + i for s in hopeless for i in range(count)]

    hook = stop_hopeless if loss_limit is not None else None
    generations = decode_settings(params, pair, settings, examples, files, fold_heads, hook)
    outcomes = []
    for index, setting in enumerate(settings):
        if hook is not None and index in loss_limit.stopped:
            continue
        requests = range(index * count, (index + 1) * count)
        if hook is None:
            summary, results = score(
                task, examples, generations[requests.start : requests.stop], pair.tokenizer, setting.name
            )
        else:  # every request of a setting that was not stopped finished, and was scored, in the hook
            results = [scored[request] for request in requests]
            summary = summarize(setting.name, results)
        outcomes.append((setting, summary, problem_figures(results)))
    return outcomes


def summary_row(setting: Setting, summary: EvalSummary) -> dict:
    figures = summary.as_dict()
    figures.pop("method")  # the setting's own fields name it
    return {"setting": setting.name, **asdict(setting), **figures}
