"""Mined importance per proposer (issue 37, item 4): Algorithm 1 on the same training problems of the
fine-tuned SmolLM2 target, once per proposer, and where each proposer's important mismatches are.

Proposers: the distilled draft of preset smollm2-arith (``pair.draft``, a causal LM: its teacher-forced
argmax, ``models.teacher_forced.DraftPredictor``) and the EAGLE head of preset smollm2-eagle
(``eagle.<name>.out``: its first draft after each prefix, fed with the target's hidden states as vLLM
feeds them, ``models.eagle_predictor.EaglePredictor``). The target, its engine (``mining.engine``) and
every other mining setting are the preset's, so the two runs differ in the predictions only.

A mismatch *involves a digit* when the target's or the proposer's token decodes to text with one.
Fractions carry 95% bootstrap intervals over problems (seeded; a problem's mismatches resampled together).

Run from the repository root with preset smollm2-eagle applied and its models built
(``autojudge preset smollm2-arith && dvc repro distill@smollm2-arith``, then ``autojudge preset
smollm2-eagle && dvc repro eagle@smollm2-arith``)::

    python results/proposers/importance.py --problems 40 --skip 400 --out results/proposers/importance-unseen \
        --drafts models/smollm2-arith/draft-4 models/smollm2-arith/draft-8 models/smollm2-arith/draft-12

``--drafts`` adds distilled drafts (the depth sweep's), each named by its folder; proposers already mined
are read back. ``--skip`` (default: ``mining.skip``) passes over the first training problems: every proposer
here was trained on the target's responses to the first 300 (the drafts) or 400 (the EAGLE head), and a
draft trained for many epochs on a problem's response agrees with it almost everywhere (the depth sweep's
drafts: 4 to 30 mismatches on the first 40 training problems, against 469 to 472 on 40 unseen ones), so
importance is mined on problems none of them saw.

Each proposer's mined problems go to ``<out>/<proposer>/problems/`` (default ``results/proposers/importance``)
as they finish (a rerun resumes); the summary to ``importance.json`` and the plot to ``importance.png`` there.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from preset import eagle_preset  # this folder's

from autojudge.bench.machine import processor_name
from autojudge.evaluation.stats import paired_bootstrap, rate_of_first
from autojudge.io import atomic_path, write_json
from autojudge.mining.run import mining_problems, mining_settings
from autojudge.mining.search import ImportantTokenSearch, MinedProblem
from autojudge.mining.shards import load_shard, mine_shard
from autojudge.models.eagle import load_head
from autojudge.models.eagle_predictor import EaglePredictor
from autojudge.models.pair import load_causal_lm, model_signature, resolve_dtype
from autojudge.models.runtime import engine_from, pair_from, task_from
from autojudge.models.teacher_forced import DraftPredictor

OUT = Path("results/proposers/importance")


def _rows(problems: list[MinedProblem], digit: set[int] | None) -> np.ndarray:
    """Per problem: [important, mismatches] among mismatches whose tokens are in ``digit`` (None: all) or,
    with ``digit`` given, split by whether they involve one."""
    rows = []
    for problem in problems:
        chosen = [
            m for m in problem.mismatches if digit is None or bool({m.target_token, m.draft_token} & digit)
        ]
        rows.append([sum(m.important for m in chosen), len(chosen)])
    return np.array(rows, dtype=float).reshape(-1, 2)


def _fraction(rows: np.ndarray) -> dict:
    if rows[:, 1].sum() == 0:
        return {"important": 0, "mismatches": 0, "fraction": None, "ci95": None}
    with np.errstate(invalid="ignore"):  # a resample without such mismatches has no fraction
        point, low, high = paired_bootstrap(rows, rows, rate_of_first, 2000, 0)
    return {
        "important": int(rows[:, 0].sum()),
        "mismatches": int(rows[:, 1].sum()),
        "fraction": round(point, 4),
        "ci95": None if np.isnan(low) or np.isnan(high) else [round(low, 4), round(high, 4)],
    }


def summary(problems: list[MinedProblem], digit_tokens: set[int]) -> dict:
    everything = _rows(problems, None)
    with_digit = _rows(problems, digit_tokens)
    return {
        "problems": len(problems),
        "mismatches_per_problem": round(float(everything[:, 1].mean()), 2),
        "all": _fraction(everything),
        "involving_a_digit": _fraction(with_digit),
        "words_only": _fraction(everything - with_digit),
    }


def plot(results: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    groups = ["all", "involving_a_digit", "words_only"]
    figure, axes = pyplot.subplots(figsize=(7, 3.5))
    width = 0.8 / len(results)
    for index, (name, figures) in enumerate(results.items()):
        points = [figures[g]["fraction"] or 0.0 for g in groups]
        errors = [
            [p - (figures[g]["ci95"] or [p, p])[0] for g, p in zip(groups, points, strict=True)],
            [(figures[g]["ci95"] or [p, p])[1] - p for g, p in zip(groups, points, strict=True)],
        ]
        bars = axes.bar(
            np.arange(len(groups)) + index * width, points, width, yerr=errors, capsize=3, label=name
        )
        counts = [f"{figures[g]['important']}/{figures[g]['mismatches']}" for g in groups]
        axes.bar_label(bars, counts, fontsize=7, label_type="center")
    axes.set_xticks(
        np.arange(len(groups)) + width * (len(results) - 1) / 2, [g.replace("_", " ") for g in groups]
    )
    axes.set_ylabel("important share of mismatches")
    axes.set_ylim(0, 1)
    axes.legend()
    axes.set_title("Algorithm 1 per proposer (95% bootstrap intervals over problems)")
    figure.tight_layout()
    with atomic_path(out) as temporary:
        figure.savefig(temporary, format="png", dpi=120)
    pyplot.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--problems", type=int, default=40)
    parser.add_argument(
        "--skip",
        type=int,
        help="training problems passed over first (default: the params' mining.skip, the presets' 400)",
    )
    parser.add_argument("--out", type=Path, default=OUT, help="folder of the mined problems and summary")
    parser.add_argument(
        "--drafts",
        type=Path,
        nargs="*",
        default=[],
        help="more distilled drafts (the depth sweep's), by folder",
    )
    args = parser.parse_args()
    params, eagle = eagle_preset(args.params)
    pair = pair_from(params)
    if args.skip is not None:
        params = params.model_copy(update={"mining": params.mining.model_copy(update={"skip": args.skip})})
    problems = mining_problems(params, pair, args.problems)
    proposers = {
        "distilled draft": (
            DraftPredictor(pair.draft, pair.vocab_size, pair.pad_token_id, params.mining.batch_size),
            model_signature(params.pair.draft),
        ),
        "eagle head": (
            EaglePredictor(
                load_head(Path(eagle.out), pair.target),
                pair.target,
                pair.vocab_size,
                params.mining.batch_size,
            ),
            model_signature(Path(eagle.out)),
        ),
    }
    for path in args.drafts:  # named by folder (draft-8: the depth sweep's 8-layer draft)
        draft = load_causal_lm(path, resolve_dtype(params.pair.dtype), role="draft")
        predictor = DraftPredictor(draft, pair.vocab_size, pair.pad_token_id, params.mining.batch_size)
        proposers[path.name] = (predictor, model_signature(path))
    digit_tokens = {t for t in range(pair.vocab_size) if any(c.isdigit() for c in pair.tokenizer.decode([t]))}
    engine = engine_from(params, pair)
    results = {}
    try:
        for name, (predictor, signature) in proposers.items():
            directory = args.out / name.replace(" ", "-")
            search = ImportantTokenSearch(
                task_from(params),
                pair.tokenizer,
                engine,
                predictor,
                params.mining.max_response_tokens,
                pair.eos_token_ids,
                params.mining.pool_size,
            )
            settings = {**mining_settings(params, pair), "proposer": name, "proposer_weights": signature}
            mine_shard(search, problems, directory, settings)
            results[name] = summary(load_shard(directory), digit_tokens)
    finally:
        engine.close()
    write_json(
        args.out / "importance.json",
        {
            "command": " ".join(["python results/proposers/importance.py", *sys.argv[1:]]),
            "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            "processor": processor_name(),
            "task": params.task.name,
            "split": params.mining.split,
            "target": str(params.pair.target),
            "proposers": results,
        },
    )
    plot(results, args.out / "importance.png")
    for name, figures in results.items():
        print(name, figures["all"], "digits:", figures["involving_a_digit"], "words:", figures["words_only"])


if __name__ == "__main__":
    main()
