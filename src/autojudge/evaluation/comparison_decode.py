"""Running the comparison (:mod:`autojudge.evaluation.comparison`): the validation grids and the chosen points
decoded with the pair, on the reference engine or vLLM.

The protocol's choices, tables and verdicts live in :mod:`autojudge.evaluation.comparison`, which decodes
nothing, so that the card and the reports read a comparison without the model stack.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from autojudge.evaluation.comparison import choose_points, chosen_settings, decision, split_table
from autojudge.evaluation.early_stop import LossLimit
from autojudge.evaluation.grids import method_scores
from autojudge.evaluation.rate_search import RateSearch
from autojudge.evaluation.scoring import EvalSummary
from autojudge.evaluation.setting import Setting
from autojudge.evaluation.sweep import ProblemFigures, figure_columns, run_settings, summary_row
from autojudge.heads.artifact import JudgeHead, load_head
from autojudge.heads.out_of_fold import fold_heads_for
from autojudge.params import Params


def _columns(figures: dict[str, list[ProblemFigures]]) -> dict[str, dict[str, list]]:
    """Setting name -> its per-problem figures as parallel lists: what every interval is computed from."""
    return {name: figure_columns(problems) for name, problems in figures.items()}


Outcome = tuple[Setting, EvalSummary, list[ProblemFigures]]


def _search_rates(
    params: Params, heads: dict[str, JudgeHead], decode: Callable[..., list[Outcome]]
) -> tuple[list[Outcome], list[dict]]:
    """The validation sweep: exact SD and target greedy, then every method's rate search
    (:class:`RateSearch`), round by round, each probe stopped once no budget can choose it. Returns the
    outcomes decoded to the end (exact SD, target greedy, probes) and a row per stopped probe."""
    settings = params.compare
    split, limit = settings.validation_split, settings.validation_limit
    outcomes = decode([Setting("exact", settings.window), Setting("target")], split, limit)
    reference = [problem.correct for problem in outcomes[-1][2]]
    search = RateSearch(
        method_scores(params, heads), settings.rates, settings.budgets, settings.window, settings.refine
    )
    stopped: list[dict] = []
    while probes := search.next_round():
        loss_limit = LossLimit(reference, max(settings.budgets)) if settings.early_stop else None
        decoded = decode(probes, split, limit, loss_limit)
        for setting, _, figures in decoded:
            drop = (sum(reference) - sum(problem.correct for problem in figures)) / len(reference)
            search.record(setting, drop)
        for index in sorted(loss_limit.stopped if loss_limit else ()):
            setting, tally = probes[index], loss_limit.tallies[index]
            search.record(setting, None)
            stopped.append({"setting": setting.name, **asdict(setting), **asdict(tally), "stopped": True})
        outcomes += decoded
    return outcomes, stopped


def compare_methods(
    params: Params, head: Path, selfjudge_head: Path | None
) -> tuple[dict, dict[str, list[dict]]]:
    """The protocol on params.compare: the validation sweep, the chosen points on every test split, the
    tables and verdicts; also every decoded row per split (``validation`` included) for the plots.

    ``problems`` keeps, per split (``validation`` included), every decoded setting's per-problem figures,
    so that any interval can be recomputed from the file alone (:mod:`autojudge.evaluation.intervals`)."""
    settings = params.compare
    heads, more_heads = {"judge": load_head(head)}, {}
    if selfjudge_head is not None:
        heads["selfjudge"], more_heads["selfjudge"] = load_head(selfjudge_head), selfjudge_head
    samples, seed = settings.bootstrap_samples, settings.seed

    def decode(candidates: list[Setting], split: str, limit: int | None, loss_limit: LossLimit | None = None):
        folds = fold_heads_for(params, head.parent, split)
        return run_settings(params, candidates, split, limit, head, more_heads, folds, loss_limit)

    validated, stopped = _search_rates(params, heads, decode)
    validation_rows = [summary_row(setting, summary) for setting, summary, _ in validated]
    chosen = choose_points(validation_rows, settings.budgets)
    rows = {"validation": validation_rows}
    result = {
        "protocol": {
            "validation_split": settings.validation_split,
            "validation_examples": validation_rows[0]["examples"],
            "rates": list(settings.rates),
            "refine": settings.refine,
            "window": settings.window,
            "test_limit": settings.limit,
            "bootstrap_samples": samples,
            "seed": seed,
        },
        "budgets": list(chosen),
        "chosen": chosen,
        "validation": validation_rows,
        "stopped": stopped,
        "splits": {},
        "decisions": {},
        "problems": {"validation": _columns({s.name: problems for s, _, problems in validated})},
    }
    by_name = {row["setting"]: row for row in [*validation_rows, *stopped]}
    candidates = [setting for setting, _, _ in validated]
    for split in settings.splits:
        outcomes = decode(chosen_settings(candidates, chosen), split, settings.limit)
        figures = {setting.name: problems for setting, _, problems in outcomes}
        rows[split] = [summary_row(setting, summary) for setting, summary, _ in outcomes]
        table = split_table(chosen, figures, by_name, samples, seed)
        result["splits"][split] = {**table, "settings": rows[split]}
        result["decisions"][split] = {b: decision(table, b, figures, samples, seed) for b in chosen}
        result["problems"][split] = _columns(figures)
    return result, rows
