"""A vLLM speculative engine (draft model, EAGLE head or n-gram) with the plugin configured, and decoding.

Two functions and one result type::

    from autojudge.vllm_plugin.engine import decode, speculative_llm

    llm = speculative_llm(
        "models/toy/target", "models/toy/draft", window=8,
        rule_config={"rule": "judge", "judge_head": "heads/head.safetensors"},  # None: plugin off
        engine_kwargs={"kv_cache_memory_bytes": 1 << 28, "enforce_eager": True},  # CPU build
    )
    results = decode(llm, prompts, max_new_tokens=192, eos_token_ids={2})
    results = decode(llm, prompts, 192, {2}, override={"threshold": 0.0})  # per-request rule
    results = decode(llm, prompts, 192, {2}, sampling=Sampling(0.7, seed=1))  # sampled, seeded
    results[0].tokens, results[0].target_passes, results[0].mat
    llm.llm_engine.engine_core.shutdown()

``rule_config`` takes the keys of :mod:`autojudge.vllm_plugin.config` (the rule registry's keys and
``judge_head``); it is parsed here, and vLLM's frontend (the
plugin's ``prepare_engine``) checks the vLLM, pins the head and checks it against the models'
hidden sizes and tokenizer before any worker starts. ``override`` changes the rule or its
keys for the requests of one ``decode`` call without a new
engine (only on an engine with the plugin on).

Counting target passes: vLLM reports per request (``per_request_spec_decode_metrics``) how many
verification steps it ran and how many draft tokens they accepted. A request's target passes
are its prefill, its verification steps, and any decode step without drafts (each of which
yields one token; inferred from the token count). MAT = generated tokens / target passes, as in
the reference engine. vLLM starts processes: callers must run under ``if __name__ == "__main__":``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from autojudge.decoding.sampling import Sampling
from autojudge.errors import InputError
from autojudge.vllm_plugin.config import CONFIG_KEY, parse_config, request_config, resolve_config
from autojudge.vllm_plugin.counters import RequestCounts, log_requests, request_log_dir

PROPOSERS = ("draft_model", "eagle", "ngram")  # vLLM's speculative methods the plugin verifies


@dataclass(frozen=True)
class SpecResult:
    """One request's generated tokens and speculative-decoding counters."""

    tokens: list[int]
    spec_steps: int  # verification passes (target passes that checked drafts)
    draft_tokens: int  # draft tokens proposed to them
    accepted_draft_tokens: int
    target_passes: int
    lossy_accepts: int | None = None  # emitted drafts lossless verification rejects (asked for: count_lossy)

    @property
    def mat(self) -> float:
        """Mean accepted tokens: generated tokens per target forward pass."""
        return len(self.tokens) / self.target_passes if self.target_passes else 0.0


def speculative_llm(
    target: str | Path,
    draft: str | Path | None,
    window: int,
    rule_config: Mapping[str, Any] | None,
    engine_kwargs: Mapping[str, Any] | None = None,
    dtype: str = "float32",
    max_model_len: int = 512,
    seed: int = 0,
    in_process: bool = False,
    method: str = "draft_model",
    proposer_keys: Mapping[str, Any] | None = None,
    count_lossy: bool = False,
) -> Any:
    """A ``vllm.LLM`` doing speculative decoding with ``window`` draft tokens; the plugin on iff
    ``rule_config`` (``in_process``: engine core and worker in this process,
    ``engines.vllm_engine.create_llm``). ``method`` is vLLM's proposer: ``draft_model`` (``draft`` is the
    draft model), ``eagle`` (``draft`` is the EAGLE head) or ``ngram`` (no ``draft``); ``proposer_keys``
    go to ``speculative_config`` too (e.g. ngram's ``prompt_lookup_min``/``prompt_lookup_max``).
    ``count_lossy``: the workers log each request's lossy accepts for ``decode(count_lossy=True)``."""
    if method not in PROPOSERS:
        raise InputError(
            f"vllm speculative engine: method must be one of {', '.join(PROPOSERS)}, got {method!r}"
        )
    needs_draft = method != "ngram"
    if needs_draft and draft is None:
        raise InputError(f"vllm speculative engine: method {method} needs a draft model or head")
    for role, path in (("target", target), ("draft", draft if needs_draft else None)):
        if path is not None and not Path(path).exists():
            raise InputError(f"vllm speculative engine: {role} model not found: {path}")
    if window < 1:
        raise InputError(f"vllm speculative engine: the draft window must be at least 1, got {window}")
    kwargs = dict(engine_kwargs or {})
    if rule_config is not None:
        parse_config(rule_config)  # bad keys stop here, before vLLM starts
        additional = dict(kwargs.pop("additional_config", None) or {})
        additional[CONFIG_KEY] = dict(rule_config)
        kwargs["additional_config"] = additional
    if count_lossy:
        log_requests()  # before the engine's processes start: they inherit where to log
    from autojudge.engines.vllm_engine import create_llm

    speculative = {"method": method, "num_speculative_tokens": window, "max_model_len": max_model_len}
    if needs_draft:
        speculative["model"] = str(draft)
    return create_llm(
        in_process,
        model=str(target),
        dtype=dtype,
        max_model_len=max_model_len,
        seed=seed,
        speculative_config={**speculative, **(proposer_keys or {})},
        per_request_spec_decode_metrics="summary",
        **kwargs,
    )


def _result(output: Any, counts: RequestCounts | None = None) -> SpecResult:
    """One finished request's result; ``counts``: the plugin's per-request counters, read after it finished."""
    completion = output.outputs[0]
    metrics = completion.spec_decode_metrics
    result = spec_result(list(completion.token_ids), metrics.to_dict() if metrics is not None else {})
    if counts is None:
        return result
    return replace(result, lossy_accepts=counts.read().get(output.request_id, [0, 0])[0])


def spec_result(tokens: list[int], summary: Mapping[str, Any]) -> SpecResult:
    """A request's result from its tokens and vLLM's per-request speculative-decoding summary (as
    ``LLM.generate`` and the OpenAI server's ``metrics.speculative_decoding`` report it)."""
    steps = int(summary.get("num_spec_steps", 0))
    accepted = int(summary.get("num_accepted_draft_tokens", 0))
    without_drafts = max(0, len(tokens) - 1 - steps - accepted)
    return SpecResult(
        tokens=tokens,
        spec_steps=steps,
        draft_tokens=int(summary.get("num_draft_tokens", 0)),
        accepted_draft_tokens=accepted,
        target_passes=(1 + steps + without_drafts) if tokens else 0,
    )


def decode(
    llm: Any,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int | Sequence[int],
    eos_token_ids: set[int],
    override: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None = None,
    sampling: Sampling | Sequence[Sampling | None] | None = None,
    count_lossy: bool = False,
    on_finished: Callable[[list[tuple[int, SpecResult]]], Iterable[int]] | None = None,
) -> list[SpecResult]:
    """Decoding of token-id prompts (stopping at ``eos_token_ids``; caps per prompt or one for all; a
    rule override for all prompts or one per prompt, None: the engine's rule; greedy, or sampled with
    ``sampling``'s temperature, top-p and seed, for all prompts or one per prompt).

    ``count_lossy``: each result also carries its lossy accepts, from the plugin's own per-request counters
    (the engine was started with ``speculative_llm(count_lossy=True)``). Not for timed decodes.

    ``on_finished`` sees the (index, result) of the requests that finished in each engine step and may
    name requests to abort: they stop where they are and come back empty (the caller ignores them).
    Requests join in the prompts' order."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    overrides = list(override) if isinstance(override, Sequence) else [override] * len(prompts)
    if any(o is not None for o in overrides):
        engine = resolve_config(llm.llm_engine.vllm_config.additional_config, os.environ)
        if engine is None:
            raise InputError("autojudge: a rule override needs an engine with the plugin on")
        spec = llm.llm_engine.vllm_config.speculative_config
        for one in {repr(o): o for o in overrides if o is not None}.values():  # refuse bad ones here
            request_config(engine, {CONFIG_KEY: one}, spec.num_speculative_tokens)
    caps = [max_new_tokens] * len(prompts) if isinstance(max_new_tokens, int) else list(max_new_tokens)
    samplings = list(sampling) if isinstance(sampling, Sequence) else [sampling] * len(prompts)
    params = [
        SamplingParams(
            temperature=0.0 if how is None else how.temperature,
            top_p=1.0 if how is None else how.top_p,
            seed=None if how is None else how.seed,
            max_tokens=cap,
            stop_token_ids=sorted(eos_token_ids),
            detokenize=False,
            extra_args=None if one is None else {CONFIG_KEY: dict(one)},
        )
        for cap, one, how in zip(caps, overrides, samplings, strict=True)
    ]
    inputs = [TokensPrompt(prompt_token_ids=list(p)) for p in prompts]
    counts = _request_counts() if count_lossy else None
    if on_finished is None:
        return [_result(output, counts) for output in llm.generate(inputs, params, use_tqdm=False)]
    return _generate_stoppable(llm.llm_engine, inputs, params, on_finished, counts)


def _request_counts() -> RequestCounts:
    directory = request_log_dir()
    if directory is None:
        raise InputError(
            "autojudge: count_lossy needs an engine started with speculative_llm(count_lossy=True)"
        )
    return RequestCounts(directory)


def _generate_stoppable(
    engine: Any,
    inputs: list[Any],
    params: list[Any],
    on_finished: Callable[[list[tuple[int, SpecResult]]], Iterable[int]],
    counts: RequestCounts | None,
) -> list[SpecResult]:
    """``LLM.generate`` one engine step at a time, aborting what ``on_finished`` names."""
    from vllm.sampling_params import RequestOutputKind

    request_ids = [f"autojudge-{index}" for index in range(len(inputs))]
    for request_id, prompt, one in zip(request_ids, inputs, params, strict=True):
        one.output_kind = RequestOutputKind.FINAL_ONLY
        engine.add_request(request_id, prompt, one)
    results: dict[int, SpecResult] = {}
    while engine.has_unfinished_requests():
        finished = [
            (int(output.request_id.rsplit("-", 1)[1]), _result(output, counts))
            for output in engine.step()
            if output.finished
        ]
        finished = [(index, result) for index, result in finished if index not in results]
        results.update(finished)
        aborted = [index for index in on_finished(finished) if index not in results] if finished else []
        if aborted:
            engine.abort_request([request_ids[index] for index in aborted])
            results.update((index, spec_result([], {})) for index in aborted)
    return [results[index] for index in range(len(inputs))]
