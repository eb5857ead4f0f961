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
from autojudge.evaluation import EvalSummary, evaluate
from autojudge.heads.artifact import load_head
from autojudge.params import Params
from autojudge.runtime import pair_from, task_from


@dataclass(frozen=True)
class Setting:
    """One way of decoding: ``method`` is target, draft, exact, topk or judge."""

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
        return f"judge t={self.threshold:.4g} W={self.window}"


_WORKER: dict = {}


def _load_worker(params: Params, head_path: Path | None, split: str, limit: int | None, threads: int) -> None:
    torch.set_num_threads(threads)
    _WORKER["params"] = params
    _WORKER["pair"] = pair_from(params)
    _WORKER["task"] = task_from(params)
    _WORKER["examples"] = _WORKER["task"].load_split(split, limit)
    _WORKER["head"] = load_head(head_path) if head_path is not None else None


def _rule(setting: Setting) -> AcceptanceRule:
    if setting.method == "exact":
        return ExactMatch()
    if setting.method == "topk":
        return TopK(setting.k)
    return JudgeRule(_WORKER["head"], setting.threshold)


def _run(setting: Setting) -> tuple[Setting, EvalSummary, list[str]]:
    params, pair = _WORKER["params"], _WORKER["pair"]
    max_new = params.decoding.max_new_tokens
    if setting.method == "target":
        decoder = target_only(pair, max_new)
    elif setting.method == "draft":
        decoder = draft_only(pair, max_new)
    else:
        decoder = speculative(pair, _rule(setting), setting.window, max_new)
    summary, results = evaluate(
        _WORKER["task"], _WORKER["examples"], decoder, pair.tokenizer, setting.name, params.pair.chat_template
    )
    return setting, summary, [r.id for r in results if r.correct]


def run_settings(
    params: Params,
    settings: list[Setting],
    split: str,
    limit: int | None,
    head_path: Path | None,
    workers: int,
) -> list[tuple[Setting, EvalSummary, list[str]]]:
    """Decode the split with every setting; returns (setting, summary, ids answered correctly) in order."""
    workers = max(1, min(workers, len(settings), os.cpu_count() or 1))
    threads = max(1, (os.cpu_count() or 1) // workers)
    if workers == 1:
        _load_worker(params, head_path, split, limit, threads)
        return [_run(s) for s in settings]
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=get_context("spawn"),
        initializer=_load_worker,
        initargs=(params, head_path, split, limit, threads),
    ) as pool:
        return list(pool.map(_run, settings))


def summary_row(setting: Setting, summary: EvalSummary) -> dict:
    figures = summary.as_dict()
    figures.pop("method")  # the setting's own fields name it
    return {"setting": setting.name, **asdict(setting), **figures}
