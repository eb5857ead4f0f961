"""Running the comparison (:mod:`autojudge.evaluation.comparison`): the validation grids and the chosen points
decoded with the pair, on the reference engine or vLLM.

The protocol's choices, tables and verdicts live in :mod:`autojudge.evaluation.comparison`, which decodes
nothing, so that the card and the reports read a comparison without the model stack.
"""

from __future__ import annotations

from pathlib import Path

from autojudge.evaluation.comparison import choose_points, chosen_settings, decision, split_table
from autojudge.evaluation.grids import candidate_grid
from autojudge.evaluation.setting import Setting
from autojudge.evaluation.sweep import ProblemFigures, figure_columns, run_settings, summary_row
from autojudge.heads.artifact import load_head
from autojudge.heads.out_of_fold import fold_heads_for
from autojudge.params import Params


def _columns(figures: dict[str, list[ProblemFigures]]) -> dict[str, dict[str, list]]:
    """Setting name -> its per-problem figures as parallel lists: what every interval is computed from."""
    return {name: figure_columns(problems) for name, problems in figures.items()}


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

    def decode(candidates: list[Setting], split: str, limit: int | None):
        folds = fold_heads_for(params, head.parent, split)
        return run_settings(params, candidates, split, limit, head, more_heads, folds)

    grid = candidate_grid(params, heads)
    candidates = [*grid, Setting("exact", settings.window), Setting("target")]
    validated = decode(candidates, settings.validation_split, settings.validation_limit)
    validation_rows = [summary_row(setting, summary) for setting, summary, _ in validated]
    chosen = choose_points(validation_rows, settings.budgets)
    rows = {"validation": validation_rows}
    result = {
        "protocol": {
            "validation_split": settings.validation_split,
            "validation_examples": validation_rows[0]["examples"],
            "rates": list(settings.rates),
            "window": settings.window,
            "test_limit": settings.limit,
            "bootstrap_samples": samples,
            "seed": seed,
        },
        "budgets": list(chosen),
        "chosen": chosen,
        "validation": validation_rows,
        "splits": {},
        "decisions": {},
        "problems": {"validation": _columns({s.name: problems for s, _, problems in validated})},
    }
    by_name = {row["setting"]: row for row in validation_rows}
    for split in settings.splits:
        outcomes = decode(chosen_settings(candidates, chosen), split, settings.limit)
        figures = {setting.name: problems for setting, _, problems in outcomes}
        rows[split] = [summary_row(setting, summary) for setting, summary, _ in outcomes]
        table = split_table(chosen, figures, by_name, samples, seed)
        result["splits"][split] = {**table, "settings": rows[split]}
        result["decisions"][split] = {b: decision(table, b, figures, samples, seed) for b in chosen}
        result["problems"][split] = _columns(figures)
    return result, rows
