"""Decoding the domain-shift table (:mod:`autojudge.evaluation.crossdomain`): every pipeline task's head on
every domain of ``crossdomain.domains``, with the pair, on the reference engine or vLLM."""

from __future__ import annotations

from pathlib import Path

from autojudge.errors import InputError
from autojudge.evaluation.comparison import MIN_COMPETENCE
from autojudge.evaluation.crossdomain import Domain, domain_row, head_method
from autojudge.evaluation.figures import figure_columns
from autojudge.evaluation.setting import Setting
from autojudge.evaluation.sweep import run_settings
from autojudge.heads.artifact import load_head
from autojudge.params import Params


def cross_domain(params: Params, heads: dict[str, Path]) -> dict:
    """Every head of ``heads`` (pipeline task -> head file) on every domain of params.crossdomain; with
    ``problems`` (domain -> setting name -> per-problem figures) and the bootstrap's samples and seed, so
    that every interval can be recomputed from the file alone (:mod:`autojudge.evaluation.intervals`)."""
    settings = params.crossdomain
    missing = [str(path) for path in heads.values() if not path.is_file()]
    if missing:
        raise InputError(f"crossdomain: head files not found: {missing}")
    thresholds = {task: load_head(path).threshold for task, path in heads.items()}
    methods = [Setting("target"), Setting("exact", settings.window)]
    methods += [Setting("judge", settings.window, threshold=t, head=task) for task, t in thresholds.items()]
    rows: dict[str, list[dict]] = {task: [] for task in heads}
    problems: dict[str, dict[str, dict[str, list]]] = {}  # domain -> setting name -> per-problem figures
    own = {task: Domain(task, params.for_task(task).evaluate.split) for task in heads}
    for domain in map(Domain.parse, settings.domains):
        outcomes = run_settings(
            params.for_task(domain.task),
            methods,
            domain.split,
            settings.limit,
            None,
            {head_method(task): path for task, path in heads.items()},
        )
        target, exact, *judged = (figures for _, _, figures in outcomes)
        problems[domain.name] = {setting.name: figure_columns(figures) for setting, _, figures in outcomes}
        for task, figures in zip(heads, judged, strict=True):
            samples, seed = settings.bootstrap_samples, settings.seed
            rows[task].append(
                domain_row(domain, task, domain == own[task], target, exact, figures, samples, seed)
            )
    return {
        "window": settings.window,
        "limit": settings.limit,
        "min_competence": MIN_COMPETENCE,
        "thresholds": thresholds,
        "heads": rows,
        "bootstrap_samples": settings.bootstrap_samples,
        "seed": settings.seed,
        "problems": problems,
    }
