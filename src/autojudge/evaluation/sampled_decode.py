"""Decoding the comparison's chosen points under sampling (:mod:`autojudge.evaluation.sampled`): every seed
of a split with exact speculative sampling and each method's rule, on the reference engine or vLLM."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from autojudge.decoding.batched import BatchedDecoder, Request
from autojudge.decoding.generation import Generation
from autojudge.decoding.sampling import Sampling
from autojudge.evaluation.sampled import EXACT, method_figures
from autojudge.evaluation.scoring import score
from autojudge.evaluation.setting import Setting
from autojudge.evaluation.vllm_sweep import Job, decode_on_vllm, job_of
from autojudge.heads.artifact import JudgeHead, load_head
from autojudge.models.pair import ModelPair
from autojudge.models.prompts import encode_prompt
from autojudge.params import Params
from autojudge.rules.acceptance import ExactMatch
from autojudge.rules.build import build_rule
from autojudge.rules.config import RuleConfig
from autojudge.tasks.base import Task


def decode_sampled(
    params: Params,
    pair: ModelPair,
    task: Task,
    settings: list[Setting],
    head_files: dict[str, Path],
    split: str,
) -> dict:
    """One split's figures on ``decoding.engine``: per method, accuracy and MAT (pooled over seeds) with
    intervals against exact speculative sampling, the shift from lossless sampling (always measured on the
    reference engine: vLLM cannot observe a rule it does not apply; none for an EAGLE head, which the
    reference engine cannot decode), and the per-problem values."""
    spec = params.sampled
    examples = task.load_split(split, spec.limit)
    prompts = [
        encode_prompt(pair.tokenizer, task.build_prompt(e), params.pair.chat_template) for e in examples
    ]
    names = [EXACT, *(setting.name for setting in settings)]
    heads = {method: load_head(path) for method, path in head_files.items()}
    on_vllm = params.decoding.engine == "vllm"
    if on_vllm:
        decoded = _decode_on_vllm(params, pair, settings, prompts, head_files)
        shifts = None
        if pair.proposer != "eagle":
            shifts = _decode_reference(params, pair, settings, prompts, heads, exact_only=True)[EXACT]
    else:
        decoded = _decode_reference(params, pair, settings, prompts, heads, exact_only=False)
        shifts = decoded[EXACT]
    n = len(examples)
    per_problem = {name: np.zeros((n, 3)) for name in names}  # correct, tokens, target passes
    for name in names:
        for generations in decoded[name]:  # one list per seed
            _, results = score(task, examples, generations, pair.tokenizer, name)
            per_problem[name] += [[r.correct, r.tokens, r.target_passes] for r in results]
    shift = None if shifts is None else np.zeros((n, len(settings)))
    for generations in shifts or ():
        shift += [g.stats.shifts or [0.0] * len(settings) for g in generations]
    figures = method_figures(per_problem, shift, names, len(spec.seeds), params.compare)
    return {"problems": n, "engine": "vllm" if on_vllm else "reference", **figures}


def _decode_reference(
    params: Params,
    pair: ModelPair,
    settings: list[Setting],
    prompts: list[list[int]],
    heads: dict[str, JudgeHead],
    exact_only: bool,
) -> dict[str, list[list[Generation]]]:
    """Per method (exact only: exact speculative sampling observing every rule), per seed, the reference
    engine's generations."""
    spec, window = params.sampled, params.compare.window
    rules = {
        s.name: build_rule(s.rule_config(params.compare), window, heads.get(s.head_key)) for s in settings
    }
    names = [EXACT] if exact_only else [EXACT, *rules]
    requests = []
    for seed in spec.seeds:
        sampling = Sampling(spec.temperature, spec.top_p, seed)
        for name in names:
            rule = ExactMatch() if name == EXACT else rules[name]
            observed = tuple(rules.values()) if name == EXACT else ()
            requests += [Request(prompt, rule, sampling, observed) for prompt in prompts]
    decoder = BatchedDecoder(
        pair.target, pair.draft, pair.vocab_size, pair.eos_token_ids, window,
        params.decoding.max_new_tokens, params.decoding.batch_size,
    )  # fmt: skip
    generations = decoder.generate(requests, f"sampled, T={spec.temperature}, reference engine")
    n = len(prompts)
    blocks = [generations[start : start + n] for start in range(0, len(generations), n)]
    return {name: blocks[column :: len(names)] for column, name in enumerate(names)}


def without_chunked_prefill(params: Params) -> Params:
    """``params`` with vLLM's chunked prefill off: vLLM 0.32's model runner rewinds a seeded request's generator
    when it discards the token of a partial prefill (``Generator.set_offset``), which a CPU generator refuses
    (RuntimeError), so a batch of seeded requests whose prompts exceed one step's token budget crashes the CPU
    engine. Without chunked prefill the scheduler waits instead of splitting a prompt."""
    vllm = params.mining.vllm
    unchunked = vllm.model_copy(
        update={"engine_kwargs": {**vllm.engine_kwargs, "enable_chunked_prefill": False}}
    )
    return params.model_copy(update={"mining": params.mining.model_copy(update={"vllm": unchunked})})


def _decode_on_vllm(
    params: Params,
    pair: ModelPair,
    settings: list[Setting],
    prompts: list[list[int]],
    head_files: dict[str, Path],
) -> dict[str, list[list[Generation]]]:
    """Per method, per seed, vLLM's generations with the plugin (every seed's requests in one call)."""
    spec, compare = params.sampled, params.compare
    if params.pair.device == "cpu":
        params = without_chunked_prefill(params)
    exact = Job("speculative", compare.window, RuleConfig("exact"))
    jobs = [exact, *(job_of(setting, compare) for setting in settings)]
    samplings = [Sampling(spec.temperature, spec.top_p, seed) for seed in spec.seeds for _ in prompts]
    per_job = decode_on_vllm(
        params, jobs, prompts * len(spec.seeds), pair.eos_token_ids, dict(head_files), samplings
    )
    n = len(prompts)
    names = [EXACT, *(setting.name for setting in settings)]
    return {
        name: [generations[start : start + n] for start in range(0, len(generations), n)]
        for name, generations in zip(names, per_job, strict=True)
    }
