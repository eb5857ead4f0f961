"""Running the comparison (:mod:`autojudge.evaluation.comparison`): the validation grids and the chosen points
decoded with the pair, on the reference engine or vLLM.

The protocol's choices, tables and verdicts live in :mod:`autojudge.evaluation.comparison`, which decodes
nothing, so that the card and the reports read a comparison without the model stack. Given a directory,
every decode is kept there as it finishes and read back by a rerun of the same inputs
(:mod:`autojudge.evaluation.decode_cache`): an interrupted comparison resumes. The ceiling's validation
problems (:mod:`autojudge.evaluation.comparison_ceiling`) are mined into its ``ceiling`` shard, resumed alike.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch

from autojudge.evaluation.ceiling import Accepts, judged
from autojudge.evaluation.comparison import choose_points, chosen_settings, decision, split_table
from autojudge.evaluation.comparison_ceiling import ceiling_section, chosen_points
from autojudge.evaluation.decode_cache import DecodeCache, Outcome, tree_digest
from autojudge.evaluation.early_stop import LossLimit, Tally
from autojudge.evaluation.figures import ProblemFigures, figure_columns
from autojudge.evaluation.grids import labelled_scores, method_scores, score_cut
from autojudge.evaluation.rate_search import RateSearch
from autojudge.evaluation.setting import Setting
from autojudge.evaluation.sweep import run_settings, summary_row
from autojudge.heads.artifact import JudgeHead, load_head
from autojudge.heads.out_of_fold import fold_heads_for
from autojudge.mining.run import mine_first
from autojudge.models.pair import weights_digest
from autojudge.params import Params

Decode = Callable[..., tuple[list[Outcome], list[tuple[Setting, Tally]]]]


def _columns(figures: dict[str, list[ProblemFigures]]) -> dict[str, dict[str, list]]:
    """Setting name -> its per-problem figures as parallel lists: what every interval is computed from."""
    return {name: figure_columns(problems) for name, problems in figures.items()}


def decode_inputs(params: Params, head: Path, selfjudge_head: Path | None) -> dict:
    """What the comparison's decodes depend on (a kept decode of other inputs is never read back)."""
    dumped = params.model_dump(mode="json")
    dumped["compare"].pop("ceiling_problems")  # no decode's input: more ceiling problems mine only those
    source = Path(__file__).resolve().parents[1]  # the package: any change of code decodes anew
    return {
        "params": {key: dumped[key] for key in ("task", "pair", "decoding", "compare")},
        "vllm": dumped["mining"]["vllm"],
        "heads": tree_digest(head.parent, *([selfjudge_head] if selfjudge_head else [])),
        "pair": [weights_digest(params.pair.draft), weights_digest(params.pair.target)],
        "data": tree_digest(Path(params.task.data_dir)),
        "source": tree_digest(source, pattern="*.py"),
    }


def _search_rates(
    params: Params, scores: dict[str, torch.Tensor], decode: Decode
) -> tuple[list[Outcome], list[dict]]:
    """The validation sweep: exact SD and target greedy, then every method's rate search
    (:class:`RateSearch` over ``scores``, :func:`method_scores`), round by round, each probe stopped once
    no budget can choose it. Returns the outcomes decoded to the end (exact SD, target greedy, probes) and
    a row per stopped probe."""
    settings = params.compare
    split, limit = settings.validation_split, settings.validation_limit
    outcomes, _ = decode([Setting("exact", settings.window), Setting("target")], split, limit)
    reference = [problem.correct for problem in outcomes[-1][2]]
    search = RateSearch(scores, settings.rates, settings.budgets, settings.window, settings.refine)
    stopped: list[dict] = []
    while probes := search.next_round():
        loss_limit = LossLimit(reference, max(settings.budgets)) if settings.early_stop else None
        decoded, stopped_now = decode(probes, split, limit, loss_limit)
        for setting, _, figures in decoded:
            drop = (sum(reference) - sum(problem.correct for problem in figures)) / len(reference)
            search.record(setting, drop)
        for setting, tally in stopped_now:
            search.record(setting, None)
            stopped.append({"setting": setting.name, **asdict(setting), **asdict(tally), "stopped": True})
        outcomes += decoded
    return outcomes, stopped


def _ceiling(
    params: Params, heads: dict[str, JudgeHead], result: dict, candidates: list[Setting], kept: Path | None
) -> dict:
    """The ceiling section of the comparison ``result``: the first ``compare.ceiling_problems`` validation
    problems mined (into ``kept``/ceiling, resuming) and every chosen point's rule scored at their labelled
    mismatches, teacher-forced (:func:`autojudge.evaluation.grids.labelled_scores`)."""
    settings = params.compare
    with tempfile.TemporaryDirectory() as temporary:
        directory = kept / "ceiling" if kept else Path(temporary)
        problems = mine_first(params, settings.ceiling_problems, directory, settings.validation_split)
    keys = [(problem.id, mismatch.position) for problem in problems for mismatch in problem.mismatches]
    scores = labelled_scores(params, heads, problems)
    by_name = {setting.name: setting for setting in candidates}
    accepts: dict[str, Accepts] = {}
    for name, point in chosen_points(result["chosen"]).items():
        keyed = dict(zip(keys, scores[point["method"]], strict=True))
        accepts[name] = judged(keyed, score_cut(by_name[name]))
    split, samples, seed = settings.validation_split, settings.bootstrap_samples, settings.seed
    return ceiling_section(problems, accepts, result, split, samples, seed)


def compare_methods(
    params: Params,
    head: Path,
    selfjudge_head: Path | None,
    kept: Path | None = None,
    context_head: Path | None = None,
) -> tuple[dict, dict[str, list[dict]]]:
    """The protocol on params.compare: the validation sweep, the chosen points on every test split, the
    tables and verdicts; also every decoded row per split (``validation`` included) for the plots. Every
    decode is kept in ``kept`` (when given) and read back from there by a rerun of the same inputs.

    ``problems`` keeps, per split (``validation`` included), every decoded setting's per-problem figures,
    so that any interval can be recomputed from the file alone (:mod:`autojudge.evaluation.intervals`);
    ``ceiling`` (with ``compare.ceiling_problems``): the chosen points against a perfect judge."""
    settings = params.compare
    heads, more_heads = {"judge": load_head(head)}, {}
    for method, path in (("judge-context", context_head), ("selfjudge", selfjudge_head)):
        if path is not None:
            heads[method], more_heads[method] = load_head(path), path
    samples, seed = settings.bootstrap_samples, settings.seed

    cache = DecodeCache(kept, decode_inputs(params, head, selfjudge_head)) if kept else None

    def decode(candidates: list[Setting], split: str, limit: int | None, loss_limit: LossLimit | None = None):
        """The outcomes decoded to the end, in the candidates' order, and the probes the early stop cut."""
        kept, stopped = cache.read(candidates, split, limit) if cache else ({}, {})
        todo = [index for index in range(len(candidates)) if index not in kept and index not in stopped]
        folds = fold_heads_for(params, head.parent, split)
        pending = [candidates[index] for index in todo]
        decoded = (
            run_settings(params, pending, split, limit, head, more_heads, folds, loss_limit)
            if pending
            else []
        )
        stopped_now = {todo[i]: loss_limit.tallies[i] for i in loss_limit.stopped} if loss_limit else {}
        if cache:
            cache.keep(decoded, [(candidates[i], tally) for i, tally in stopped_now.items()], split, limit)
        fresh = {outcome[0]: outcome for outcome in decoded}
        ordered = [kept.get(index) or fresh.get(s) for index, s in enumerate(candidates)]
        stopped |= stopped_now
        cut = [(candidates[index], stopped[index]) for index in sorted(stopped)]
        return [outcome for outcome in ordered if outcome is not None], cut

    scores = cache.scores(lambda: method_scores(params, heads)) if cache else method_scores(params, heads)
    validated, stopped = _search_rates(params, scores, decode)
    validation_rows = [summary_row(setting, summary) for setting, summary, _ in validated]
    chosen = choose_points(validation_rows, settings.budgets, stopped)
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
        outcomes, _ = decode(chosen_settings(candidates, chosen), split, settings.limit)
        figures = {setting.name: problems for setting, _, problems in outcomes}
        rows[split] = [summary_row(setting, summary) for setting, summary, _ in outcomes]
        table = split_table(chosen, figures, by_name, samples, seed)
        result["splits"][split] = {**table, "settings": rows[split]}
        result["decisions"][split] = {b: decision(table, b, figures, samples, seed) for b in chosen}
        result["problems"][split] = _columns(figures)
    if settings.ceiling_problems:
        result["ceiling"] = _ceiling(params, heads, result, candidates, kept)
    return result, rows
