"""Evaluating many decoding settings on one split: every setting's problems decoded in shared batches.

A setting is plain data (method, rule, threshold). Each (setting, problem) becomes one request of the
batched reference engine with the setting's acceptance rule, so a sweep of many settings costs a few
batched passes per cycle rather than one sequence at a time.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from autojudge.decoding.batched import BatchedDecoder, Request
from autojudge.decoding.generation import Generation
from autojudge.decoding.rules import AcceptanceRule, ExactMatch, JudgeRule, TopK
from autojudge.decoding.training_free import TRAINING_FREE, training_free_rule
from autojudge.evaluation import EvalSummary, ExampleResult, score
from autojudge.heads.artifact import JudgeHead, load_head
from autojudge.heads.out_of_fold import FoldHeads, threshold_at
from autojudge.models.pair import ModelPair
from autojudge.models.prompts import encode_prompt
from autojudge.params import Params
from autojudge.runtime import pair_from, task_from
from autojudge.tasks.base import Example

ALONE = ("target", "draft")  # one model, greedy


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


def _rule(setting: Setting, params: Params, heads: dict[str, JudgeHead]) -> AcceptanceRule:
    if setting.method == "exact":
        return ExactMatch()
    if setting.method == "topk":
        return TopK(setting.k)
    if setting.method in TRAINING_FREE:
        compare = params.compare
        return training_free_rule(
            setting.method,
            setting.threshold,
            compare.kl_mask_confidence,
            compare.fly_window_size,
            compare.fly_entropy_top_k,
        )
    return JudgeRule(heads[setting.method], setting.threshold)


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
    rules = [JudgeRule(head, threshold_at(head, setting.recall)) for head in loaded]
    return [rules[fold_heads.fold(e.id)] for e in examples]


def _decode(
    params: Params, pair: ModelPair, settings: list[Setting], requests: list[Request]
) -> list[Generation]:
    """Decode the requests of every setting (``len(requests) // len(settings)`` each, in order); what
    shares a batch: the target alone, the draft alone, speculative decoding with one window."""
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
        for index, generation in zip(
            members, decoder.generate([requests[i] for i in members], label), strict=True
        ):
            generations[index] = generation
    return generations


def run_settings(
    params: Params,
    settings: list[Setting],
    split: str,
    limit: int | None,
    head_path: Path | None,
    more_heads: dict[str, Path] | None = None,
    fold_heads: FoldHeads | None = None,
) -> list[tuple[Setting, EvalSummary, list[ProblemFigures]]]:
    """Decode the split with every setting; returns (setting, summary, figures per problem) in order.

    ``head_path`` is the head of method "judge"; ``more_heads`` maps other head methods to their files;
    with ``fold_heads`` method "judge" decodes each problem with the head trained without its fold. All
    settings' problems are decoded together in batches of ``decoding.batch_size`` rows.
    """
    pair, task = pair_from(params), task_from(params)
    examples = task.load_split(split, limit)
    heads = {method: load_head(path) for method, path in (more_heads or {}).items()}
    if head_path is not None:
        heads["judge"] = load_head(head_path)
    folds = fold_heads and (fold_heads, [load_head(path) for path in fold_heads.paths])
    prompts = [
        encode_prompt(pair.tokenizer, task.build_prompt(e), params.pair.chat_template) for e in examples
    ]
    requests = [
        Request(prompt, rule)
        for setting in settings
        for prompt, rule in zip(prompts, _rules(setting, examples, params, heads, folds), strict=True)
    ]
    generations = _decode(params, pair, settings, requests)
    outcomes = []
    for index, setting in enumerate(settings):
        decoded = generations[index * len(prompts) : (index + 1) * len(prompts)]
        summary, results = score(task, examples, decoded, pair.tokenizer, setting.name)
        outcomes.append((setting, summary, problem_figures(results)))
    return outcomes


def summary_row(setting: Setting, summary: EvalSummary) -> dict:
    figures = summary.as_dict()
    figures.pop("method")  # the setting's own fields name it
    return {"setting": setting.name, **asdict(setting), **figures}
