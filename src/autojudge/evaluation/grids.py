"""Candidate grids at validation acceptance rates: the same procedure for every method.

A threshold means nothing across methods (a KL of 0.5, an entropy of 0.7, a head probability of
0.3), so grids of hand-picked thresholds let the grid's ends decide the ranking. Here every method's
candidates are placed where it accepts the same shares of mismatches: along the target's greedy
responses to the validation problems, every position where the draft's teacher-forced choice differs
is a mismatch; each method's score there (divergence, entropy, rank of the draft token, the head's
p(important)) orders them, and the candidate at rate r is the threshold that accepts a share r of them
(rate 1: every one the method can accept). Exact SD is rate 0, so each grid runs from none to all.

FLy's and KL + mask's other conditions (the deferred window, the confidence mask) still apply at decode
time; their rates count the entropy or KL gate alone.

The same scores at Algorithm 1's labelled mismatches (:func:`labelled_scores`), cut where a chosen point
accepts (:func:`score_cut`), show where each rule fails: the comparison's ceiling section.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from autojudge.decoding.batched import BatchedDecoder, Request
from autojudge.evaluation.sweep import Setting
from autojudge.features.hidden_states import encode_mismatches
from autojudge.heads.artifact import JudgeHead
from autojudge.mining.search import MinedProblem, Mismatch
from autojudge.models.pair import ModelPair
from autojudge.models.prompts import encode_prompt
from autojudge.models.runtime import pair_from, predictor_from, task_from
from autojudge.models.teacher_forced import DraftPredictor
from autojudge.params import Params
from autojudge.rules.acceptance import Window
from autojudge.rules.build import build_rule, rule_class, threshold_at_score
from autojudge.rules.config import FSD_PUBLISHED, THRESHOLD_BOUNDS, RuleConfig


@dataclass(frozen=True)
class Mismatches:
    """The draft's mismatches along the target's greedy responses: what each method's score reads."""

    draft_tokens: torch.Tensor  # [M]
    target_logits: torch.Tensor  # [M, V] the target's logits where the draft token was proposed
    draft_logits: torch.Tensor  # [M, V]
    problems: list[MinedProblem]  # per problem, its mismatches (for the heads' hidden states)


def _teacher_forced(
    pair: ModelPair, prompts: list[list[int]], responses: list[list[int]]
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Per response, the target's and the proposer's [len(response), V] logits along it."""
    target = DraftPredictor(pair.target, pair.vocab_size, pair.pad_token_id)
    draft = predictor_from(pair)
    return target.response_logits(prompts, responses), draft.response_logits(prompts, responses)


def _gathered(
    problems: list[MinedProblem], target_rows: list[torch.Tensor], draft_rows: list[torch.Tensor]
) -> Mismatches:
    """The problems' mismatches with the logits at their positions, in the problems' order."""
    tokens, target_logits, draft_logits = [], [], []
    for problem, target, draft in zip(problems, target_rows, draft_rows, strict=True):
        where = torch.tensor([m.position for m in problem.mismatches], dtype=torch.long)
        tokens.append(torch.tensor([m.draft_token for m in problem.mismatches], dtype=torch.long))
        target_logits.append(target[where])
        draft_logits.append(draft[where])
    return Mismatches(torch.cat(tokens), torch.cat(target_logits), torch.cat(draft_logits), problems)


def validation_mismatches(
    pair: ModelPair, prompts: list[list[int]], max_new_tokens: int, batch_size: int
) -> Mismatches:
    """Decode target greedy on ``prompts`` and collect every position where the draft disagrees."""
    decoder = BatchedDecoder(
        pair.target, None, pair.vocab_size, pair.eos_token_ids, 1, max_new_tokens, batch_size
    )
    responses = [g.tokens for g in decoder.generate([Request(p) for p in prompts], "grid: target greedy")]
    target_rows, draft_rows = _teacher_forced(pair, prompts, responses)
    problems = []
    for index, (prompt, response) in enumerate(zip(prompts, responses, strict=True)):
        choices = draft_rows[index].argmax(dim=-1)
        where = torch.nonzero(choices != torch.tensor(response)).flatten()
        mismatches = [Mismatch(int(p), response[p], int(choices[p]), False) for p in where]
        problems.append(MinedProblem(str(index), prompt, response, response, None, mismatches))
    return _gathered(problems, target_rows, draft_rows)


def labelled_mismatches(pair: ModelPair, problems: list[MinedProblem]) -> Mismatches:
    """Algorithm 1's tested mismatches, teacher-forced along each problem's final response (the prefix
    each was tested after), with their labels in ``problems``."""
    prompts, responses = [p.prompt_ids for p in problems], [p.response_ids for p in problems]
    return _gathered(problems, *_teacher_forced(pair, prompts, responses))


def scores(
    method: str, mismatches: Mismatches, confidence: float, fly_top_k: int, window: int
) -> torch.Tensor:
    """[M] the score the rule ``method`` thresholds (``AcceptanceRule.score``) at each mismatch: a method
    accepts a mismatch iff its score < its threshold (entropy rules: negated entropy; top-K: the draft
    token's rank, accepted iff rank < K + 1; masked rows: +inf)."""
    config = RuleConfig(
        method,
        threshold=None if method == "topk" else 0.0,
        top_k=1 if method == "topk" else None,
        confidence=confidence,
        fly_entropy_top_k=fly_top_k,
    )
    rule = build_rule(config, window)
    tokens = mismatches.draft_tokens
    hidden = torch.empty(len(tokens), 0)  # no threshold rule reads hidden states
    return rule.score(Window(tokens, mismatches.target_logits, mismatches.draft_logits, hidden))


def head_scores(
    heads: dict[str, JudgeHead], pair: ModelPair, mismatches: Mismatches, batch_size: int
) -> dict[str, torch.Tensor]:
    """[M] each head's p(important) at each mismatch (hidden states where the draft token is read, each
    model encoded once for every head)."""
    specs = [head.features for head in heads.values()]
    states = encode_mismatches(
        pair.target, pair.draft, mismatches.problems, specs, pair.pad_token_id, batch_size, pair.vocab_size
    )
    return {method: head.judge(states.inputs()) for method, head in heads.items()}


def rate_threshold(sorted_scores: torch.Tensor, rate: float) -> float:
    """The threshold t with ``score < t`` true for a share ``rate`` of the finite scores (midway between
    neighbours; rate 1: just above the largest)."""
    finite = sorted_scores[torch.isfinite(sorted_scores)]
    count = round(rate * len(finite))
    if count == 0 or not len(finite):
        return _significant(float(finite[0])) if len(finite) else 0.0
    if count >= len(finite):
        return _significant(float(finite[-1]), up=True)
    return _significant(float((finite[count - 1] + finite[count]) / 2))


def _significant(value: float, up: bool = False) -> float:
    """``value`` to 4 significant digits, as tables print it (``up``: the next such number above it)."""
    rounded = float(f"{value:.4g}")
    if up and rounded <= value:
        step = 10 ** (math.floor(math.log10(abs(rounded))) - 3) if rounded else 1e-4
        rounded = float(f"{rounded + step:.4g}")
    return rounded


def setting_at(method: str, ordered: torch.Tensor, rate: float, window: int) -> Setting:
    """``method``'s candidate that accepts a share ``rate`` of the mismatches whose sorted scores are
    ``ordered``, its threshold in the registry's range."""
    if method == "topk":  # the smallest K that accepts the share: the rank of the last one accepted
        count = max(1, round(rate * len(ordered)))
        return Setting("topk", window, k=int(ordered[count - 1]), rate=rate)
    threshold = threshold_at_score(method, rate_threshold(ordered, rate))
    low, high = THRESHOLD_BOUNDS.get(method, (0.0, math.inf))
    return Setting(method, window, threshold=min(max(threshold, low), high), rate=rate)


def score_cut(setting: Setting) -> float:
    """The score below which ``setting``'s rule accepts a mismatch (``AcceptanceRule.score_cut``: the inverse
    of :func:`setting_at`'s threshold; top-K's setting holds K)."""
    return rule_class(setting.method).score_cut(setting.k if setting.method == "topk" else setting.threshold)


def rate_settings(method: str, method_scores: torch.Tensor, rates: list[float], window: int) -> list[Setting]:
    """One candidate per rate (duplicates dropped)."""
    ordered = method_scores.sort().values
    settings: dict[str, Setting] = {}
    for rate in rates:
        setting = setting_at(method, ordered, rate, window)
        settings.setdefault(setting.name, setting)
    return list(settings.values())


def every_score(
    params: Params, heads: dict[str, JudgeHead], pair: ModelPair, mismatches: Mismatches
) -> dict[str, torch.Tensor]:
    """[M] every head's and every ``compare.methods`` rule's score at each of ``mismatches``."""
    compare = params.compare
    by_method = head_scores(heads, pair, mismatches, params.decoding.batch_size)
    for method in compare.methods:
        base = method.removesuffix("-published") if method in FSD_PUBLISHED else method
        by_method[method] = scores(
            base, mismatches, compare.confidence, compare.fly_entropy_top_k, compare.window
        )
    return by_method


def labelled_scores(
    params: Params, heads: dict[str, JudgeHead], problems: list[MinedProblem]
) -> dict[str, list[float]]:
    """Every head's and every ``compare.methods`` rule's score at each of Algorithm 1's tested mismatches of
    ``problems``, in their order (:func:`labelled_mismatches`)."""
    if not any(problem.mismatches for problem in problems):
        return {method: [] for method in [*heads, *params.compare.methods]}
    pair = pair_from(params)
    by_method = every_score(params, heads, pair, labelled_mismatches(pair, problems))
    return {method: values.tolist() for method, values in by_method.items()}


def method_scores(params: Params, heads: dict[str, JudgeHead]) -> dict[str, torch.Tensor]:
    """Every head's and every ``compare.methods`` rule's scores, sorted, at the mismatches on the
    validation problems the comparison chooses on."""
    compare, decoding = params.compare, params.decoding
    pair, task = pair_from(params), task_from(params)
    prompts = [
        encode_prompt(pair.tokenizer, task.build_prompt(e), params.pair.chat_template)
        for e in task.load_split(compare.validation_split, compare.validation_limit)
    ]
    mismatches = validation_mismatches(pair, prompts, decoding.max_new_tokens, decoding.batch_size)
    by_method = every_score(params, heads, pair, mismatches)
    return {method: values.sort().values for method, values in by_method.items()}


def candidate_grid(params: Params, heads: dict[str, JudgeHead]) -> list[Setting]:
    """Every method's candidates (:func:`method_scores`) at every rate of ``compare.rates``."""
    compare = params.compare
    return [
        setting
        for method, ordered in method_scores(params, heads).items()
        for setting in rate_settings(method, ordered, compare.rates, compare.window)
    ]
