"""Decoding a sweep on vLLM, the engine users serve with: every setting a request with its rule.

``decoding.engine: vllm`` routes evaluate, compare, crossdomain and ``autojudge eval`` here instead
of the batched reference engine. One engine per (head, window) serves every setting of that group as
per-request rule overrides (``SamplingParams.extra_args``), so continuous batching mixes the rules; an
engine whose settings read the drafter's logits (FSD, kl-mask, draft entropy) takes such a rule as its
own, so that it keeps them. The target and the draft alone run on plain engines. MAT comes from vLLM's
per-request counters (``vllm_plugin.engine.decode``): its prefill pass emits one token, so a request
counts one pass more than the reference engine, whose first pass already verifies a window. Greedy
decodes count lossy accepts from the target's ranks of the emitted tokens (``engine.decode``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from autojudge.decoding.generation import DecodeStats, Generation, Hook
from autojudge.decoding.sampling import Sampling
from autojudge.errors import InputError
from autojudge.evaluation.setting import ALONE, Setting
from autojudge.params import CompareParams, Params
from autojudge.rules.config import RuleConfig

if TYPE_CHECKING:
    from autojudge.vllm_plugin.engine import SpecResult


@dataclass(frozen=True)
class Job:
    """What one engine call decodes every prompt with: a model alone, or a rule at a window."""

    model: str  # "target" or "draft" alone, or "speculative"
    window: int = 0
    rule: RuleConfig | None = None
    head: str | None = None  # a head rule's key in the head files

    @property
    def group(self) -> tuple[str, int]:
        """Jobs of one group share an engine: the model alone, or one head (or the rules) and window."""
        if self.rule is None:
            return self.model, 0
        return (self.head or "rules"), self.window


def job_of(setting: Setting, compare: CompareParams) -> Job:
    if setting.method in ALONE:
        return Job(setting.method)
    rule = setting.rule_config(compare)
    return Job("speculative", setting.window, rule, setting.head_key if rule.needs_head else None)


def _engine_rule(kind: str, jobs: list[Job], heads: dict[str, Path | str]) -> dict:
    """The engine's own plugin config: its head, or a rule that keeps drafter logits if any job needs them."""
    if jobs[0].head is not None:
        if kind not in heads:
            raise InputError(f"decoding.engine vllm: no head file for {kind!r}")
        return {"rule": jobs[0].rule.rule, "judge_head": str(heads[kind])}
    rules = [job.rule for job in jobs if job.rule is not None]
    keeping = [rule for rule in rules if rule.needs_draft_logits]
    return (keeping[0] if keeping else rules[0]).keys()


def _llm(params: Params, job: Job, rule: dict | None):
    from autojudge.engines.vllm_engine import create_llm
    from autojudge.vllm_plugin.engine import speculative_llm

    engine = params.mining.vllm
    kwargs = {"tensor_parallel_size": engine.tensor_parallel_size, **engine.engine_kwargs}
    if job.rule is None:
        if job.model == "draft" and params.pair.proposer == "eagle":
            raise InputError("the draft alone: pair.proposer 'eagle' has no draft model, only a head")
        model = params.pair.target if job.model == "target" else params.pair.draft
        return create_llm(
            engine.in_process,
            model=str(model),
            dtype=params.pair.dtype,
            max_model_len=engine.max_model_len,
            seed=0,
            **kwargs,
        )
    return speculative_llm(
        params.pair.target,
        params.pair.draft,
        job.window,
        rule,
        kwargs,
        params.pair.dtype,
        engine.max_model_len,
        in_process=engine.in_process,
        method=params.pair.proposer,
        count_lossy=True,
    )


def decode_on_vllm(
    params: Params,
    jobs: list[Job],
    prompts: list[list[int]],
    eos_token_ids: set[int],
    heads: dict[str, Path | str],
    sampling: list[Sampling] | None = None,
    on_finished: Hook | None = None,
) -> list[list[Generation]]:
    """Per job, the generation of every prompt (greedy, or sampled with ``sampling``, one per prompt); one
    engine per group of jobs, shut down after its call. Requests join problem by problem (every job's
    first prompt, then every job's second, ...), so that ``on_finished`` (request index: job *
    len(prompts) + prompt) sees every job progress at once and may name requests to abort."""
    from autojudge.vllm_plugin.engine import decode

    groups: dict[tuple[str, int], list[int]] = {}
    for index, job in enumerate(jobs):
        groups.setdefault(job.group, []).append(index)
    out: list[list[Generation]] = [[] for _ in jobs]
    count = len(prompts)
    for (kind, _), members in groups.items():
        first = jobs[members[0]]
        rule = None if first.rule is None else _engine_rule(kind, [jobs[i] for i in members], heads)
        order = [(job, problem) for problem in range(count) for job in members]  # caller's request indices
        llm = _llm(params, first, rule)
        try:  # every job's prompts in one call: continuous batching mixes the rules
            results = decode(
                llm,
                [prompts[problem] for _, problem in order],
                params.decoding.max_new_tokens,
                eos_token_ids,
                override=[jobs[job].rule.keys() for job, _ in order] if rule is not None else None,
                sampling=[sampling[problem] for _, problem in order] if sampling else None,
                count_lossy=rule is not None and not sampling,
                on_finished=on_finished and _caller_hook(on_finished, order, count, eos_token_ids),
            )
        finally:
            llm.llm_engine.engine_core.shutdown()
        for (job, _), result in zip(order, results, strict=True):
            out[job].append(_generation(result, eos_token_ids))
    return out


def _caller_hook(
    on_finished: Hook, order: list[tuple[int, int]], count: int, eos_token_ids: set[int]
) -> Callable[[list[tuple[int, SpecResult]]], list[int]]:
    """``on_finished`` in the caller's request indices for an engine that decodes ``order``."""
    position_of = {job * count + problem: position for position, (job, problem) in enumerate(order)}

    def hook(finished: list[tuple[int, SpecResult]]) -> list[int]:
        caller = [(order[p][0] * count + order[p][1], _generation(r, eos_token_ids)) for p, r in finished]
        return [position_of[index] for index in on_finished(caller) if index in position_of]

    return hook


def _generation(result, eos_token_ids: set[int]) -> Generation:
    stats = DecodeStats(
        tokens=len(result.tokens),
        target_passes=result.target_passes,
        accepted_draft_tokens=result.accepted_draft_tokens,
        accepted_mismatches=result.lossy_accepts or 0,
    )
    return Generation(
        result.tokens, stats, finished=bool(result.tokens) and result.tokens[-1] in eos_token_ids
    )
