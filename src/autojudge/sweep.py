"""Evaluating many decoding settings on one split, in parallel worker processes.

A setting is plain data (method, rule, threshold), so it travels to a worker process that
loads the pair, the task and the head once and decodes the whole split with it.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path

import torch

from autojudge.decoding.factory import draft_only, speculative, target_only
from autojudge.decoding.rules import AcceptanceRule, ExactMatch, JudgeRule, TopK
from autojudge.decoding.training_free import TRAINING_FREE, training_free_rule
from autojudge.evaluation import EvalSummary, ExampleResult, evaluate, summarize
from autojudge.heads.artifact import load_head
from autojudge.heads.out_of_fold import FoldHeads, threshold_at
from autojudge.params import Params
from autojudge.runtime import pair_from, task_from


@dataclass(frozen=True)
class Setting:
    """One way of decoding: ``method`` is target, draft, exact, topk, a head (judge, selfjudge) or a
    training-free rule (fsd-js, fsd-kl, fsd-tv, kl-mask, target-entropy, draft-entropy)."""

    method: str
    window: int = 0
    k: int = 0
    threshold: float = 0.0
    recall: float | None = None  # the validation recall the judge threshold was chosen for

    @property
    def name(self) -> str:
        if self.method in ("target", "draft"):
            return f"{self.method} alone"
        if self.method == "exact":
            return f"exact SD W={self.window}"
        if self.method == "topk":
            return f"top-{self.k} W={self.window}"
        return f"{self.method} t={self.threshold:.4g} W={self.window}"


@dataclass(frozen=True)
class ProblemFigures:
    """One problem decoded with one setting: what the paired bootstrap resamples."""

    id: str
    correct: bool
    tokens: int
    target_passes: int


def problem_figures(results: list[ExampleResult]) -> list[ProblemFigures]:
    return [ProblemFigures(r.id, r.correct, r.tokens, r.target_passes) for r in results]


_WORKER: dict = {}


def _load_worker(
    params: Params,
    head_path: Path | None,
    split: str,
    limit: int | None,
    threads: int,
    more_heads: dict[str, Path] | None = None,
    fold_heads: FoldHeads | None = None,
) -> None:
    torch.set_num_threads(threads)
    _WORKER["params"] = params
    _WORKER["pair"] = pair_from(params)
    _WORKER["task"] = task_from(params)
    _WORKER["examples"] = _WORKER["task"].load_split(split, limit)
    _WORKER["heads"] = {method: load_head(path) for method, path in (more_heads or {}).items()}
    if head_path is not None:
        _WORKER["heads"]["judge"] = load_head(head_path)
    _WORKER["folds"] = fold_heads and (fold_heads, [load_head(path) for path in fold_heads.paths])


def _rule(setting: Setting) -> AcceptanceRule:
    if setting.method == "exact":
        return ExactMatch()
    if setting.method == "topk":
        return TopK(setting.k)
    if setting.method in TRAINING_FREE:
        compare = _WORKER["params"].compare
        return training_free_rule(
            setting.method,
            setting.threshold,
            compare.kl_mask_confidence,
            compare.fly_window_size,
            compare.fly_entropy_top_k,
        )
    return JudgeRule(_WORKER["heads"][setting.method], setting.threshold)


def _run_out_of_fold(setting: Setting) -> tuple[EvalSummary, list]:
    """The judge setting with each problem decoded by the head trained without its fold."""
    params, pair, task = _WORKER["params"], _WORKER["pair"], _WORKER["task"]
    folds, heads = _WORKER["folds"]
    examples = _WORKER["examples"]
    results = {}
    for fold, head in enumerate(heads):
        members = [e for e in examples if folds.fold(e.id) == fold]
        if not members:
            continue
        rule = JudgeRule(head, threshold_at(head, setting.recall))
        decoder = speculative(pair, rule, setting.window, params.decoding.max_new_tokens)
        _, fold_results = evaluate(
            task, members, decoder, pair.tokenizer, setting.name, params.pair.chat_template
        )
        results.update({r.id: r for r in fold_results})
    ordered = [results[e.id] for e in examples]
    return summarize(setting.name, ordered), ordered


def _run(setting: Setting) -> tuple[Setting, EvalSummary, list[ProblemFigures]]:
    params, pair = _WORKER["params"], _WORKER["pair"]
    max_new = params.decoding.max_new_tokens
    if setting.method == "judge" and _WORKER["folds"]:
        summary, results = _run_out_of_fold(setting)
        return setting, summary, problem_figures(results)
    if setting.method == "target":
        decoder = target_only(pair, max_new)
    elif setting.method == "draft":
        decoder = draft_only(pair, max_new)
    else:
        decoder = speculative(pair, _rule(setting), setting.window, max_new)
    summary, results = evaluate(
        _WORKER["task"], _WORKER["examples"], decoder, pair.tokenizer, setting.name, params.pair.chat_template
    )
    return setting, summary, problem_figures(results)


def run_settings(
    params: Params,
    settings: list[Setting],
    split: str,
    limit: int | None,
    head_path: Path | None,
    workers: int,
    more_heads: dict[str, Path] | None = None,
    fold_heads: FoldHeads | None = None,
) -> list[tuple[Setting, EvalSummary, list[ProblemFigures]]]:
    """Decode the split with every setting; returns (setting, summary, figures per problem) in order.

    ``head_path`` is the head of method "judge"; ``more_heads`` maps other head methods to their files;
    with ``fold_heads`` method "judge" decodes each problem with the head trained without its fold.
    """
    workers = max(1, min(workers, len(settings), os.cpu_count() or 1))
    threads = max(1, (os.cpu_count() or 1) // workers)
    if workers == 1:
        _load_worker(params, head_path, split, limit, threads, more_heads, fold_heads)
        return [_run(s) for s in settings]
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=get_context("spawn"),
        initializer=_load_worker,
        initargs=(params, head_path, split, limit, threads, more_heads, fold_heads),
    ) as pool:
        return list(pool.map(_run, settings))


def summary_row(setting: Setting, summary: EvalSummary) -> dict:
    figures = summary.as_dict()
    figures.pop("method")  # the setting's own fields name it
    return {"setting": setting.name, **asdict(setting), **figures}
