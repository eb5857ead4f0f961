"""The vLLM benchmark's engines: starting one from its spec, the environment each starts in, what is
recorded of them (model runner, plugin state, threads), and measuring a phase of the plan (its groups of
engines one after another, each group's engines alive together)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from autojudge.bench.energy import PowerMeter
from autojudge.bench.vllm_measure import DecodeFn, Measured, RoundRecord, measure
from autojudge.bench.vllm_plan import EngineSpec, Models, Phase
from autojudge.errors import AutoJudgeError

PLUGIN_ENABLED = "loaded, enabled"
PLUGIN_NOT_LOADED = "not loaded"


# Environment variables an engine start may change or read; restored after every start.
ENGINE_ENVIRONMENT = (
    "VLLM_PLUGINS",
    "VLLM_WORKER_MULTIPROC_METHOD",
    "VLLM_USE_V2_MODEL_RUNNER",
    "OMP_WAIT_POLICY",
)


@contextmanager
def engine_environment(plugin: bool) -> Iterator[None]:
    """The environment an engine starts in: vLLM's processes spawned, not forked, their OpenMP threads asleep
    between steps (``OMP_WAIT_POLICY=PASSIVE`` unless the caller set it: the engines alive at once bind the
    same cores and only one decodes at a time); without ``plugin``, no general plugin loaded.

    vLLM reads ``VLLM_PLUGINS`` in the engine-core and worker processes it starts during the
    engine's construction, so it only needs to be set while the engine starts. The variables the
    plugin reads (``AUTOJUDGE_VLLM_*``) are removed for an engine without it, and every variable is
    restored afterwards (the plugin's frontend sets ``VLLM_USE_V2_MODEL_RUNNER=0`` for engines that enable
    a rule, so a stock engine started later still gets vLLM's default runner).
    """
    names = [*ENGINE_ENVIRONMENT, *(name for name in os.environ if name.startswith("AUTOJUDGE_VLLM_"))]
    saved = {name: os.environ.get(name) for name in names}
    os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if not plugin:
        os.environ["VLLM_PLUGINS"] = ""
        for name in names:
            if name.startswith("AUTOJUDGE_VLLM_"):
                del os.environ[name]
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def runner_record(vllm_config: Any, plugin: bool) -> dict[str, str]:
    """The engine's model runner, worker class and plugin state (read while its environment holds)."""
    from autojudge.vllm_plugin.compat import runner_of
    from autojudge.vllm_plugin.patches import JUDGE_WORKER

    worker = str(vllm_config.parallel_config.worker_cls)
    if plugin != (worker == JUDGE_WORKER):
        raise AutoJudgeError(
            f"bench: an engine {'with' if plugin else 'without'} the plugin started with worker {worker}"
        )
    return {
        "runner": runner_of(vllm_config),
        "worker_cls": worker,
        "plugin": PLUGIN_ENABLED if plugin else PLUGIN_NOT_LOADED,
    }


def thread_record(in_process: bool, tensor_parallel_size: int) -> dict[str, Any]:
    """How the engines' threads were set: this process's torch threads, the OpenMP variables, and the cores
    a spawned CPU worker binds (every engine binds the same ones; the benchmark decodes on one at a time)."""
    import torch

    from autojudge.engines.vllm_engine import CPU_BINDING_ENV, spawned_worker_binding

    binding = os.environ.get(CPU_BINDING_ENV)
    if binding is None and not in_process:
        binding = spawned_worker_binding(tensor_parallel_size).get(CPU_BINDING_ENV)
    return {
        "cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "torch_threads": torch.get_num_threads(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE"),
        CPU_BINDING_ENV: binding,
        "engines_in_process": in_process,
    }


def start_engine(spec: EngineSpec, models: Models) -> tuple[Any, dict[str, DecodeFn]]:
    """Start the engine ``spec`` describes: the LLM and a decoder per setting it serves (prompts -> tokens and
    target passes: the target alone takes one pass per token)."""
    if not spec.window:
        from autojudge.engines.vllm_engine import VllmEngine

        engine = VllmEngine(
            models.target,
            models.dtype,
            set(models.eos),
            models.max_model_len,
            models.tensor_parallel_size,
            engine_kwargs=models.engine_kwargs,
            in_process=models.in_process,
        )

        def decode_target(batch: Sequence[Sequence[int]]) -> list[tuple[list[int], int]]:
            caps = [models.max_new_tokens] * len(batch)
            return [(tokens, len(tokens)) for tokens in engine.continue_prefixes(list(batch), caps)]

        return engine.llm, {name: decode_target for name in spec.settings}
    from autojudge.vllm_plugin.engine import decode, speculative_llm

    llm = speculative_llm(
        models.target,
        models.draft,
        spec.window,
        spec.rule,
        {"tensor_parallel_size": models.tensor_parallel_size, **models.engine_kwargs},
        models.dtype,
        models.max_model_len,
        in_process=models.in_process,
        method=models.proposer,
    )

    def decoder(override: dict[str, Any] | None) -> DecodeFn:
        return lambda batch: [
            (r.tokens, r.target_passes)
            for r in decode(llm, batch, models.max_new_tokens, set(models.eos), override=override)
        ]

    return llm, {name: decoder(override) for name, override in spec.settings.items()}


def measure_phase(phase: Phase, models: Models) -> tuple[dict[int, Measured], list[RoundRecord]]:
    """What each window's settings measured in ``phase``, and every round in the order it ran. Each group's
    engines start in order (the plugin's hook enters this process before the first plugin engine), all
    alive while the group's rounds run, and shut down before the next group starts."""
    from autojudge.vllm_plugin import register

    parts: list[tuple[int, Measured]] = []
    rounds: list[RoundRecord] = []
    for group in phase.groups:
        alive: list[Any] = []
        started: list[tuple[int, dict[str, DecodeFn], dict[str, str]]] = []
        try:
            for spec in group.engines:
                if spec.plugin:
                    register()  # the plugin's frontend hook in this process (once)
                with engine_environment(spec.plugin):
                    llm, decoders = start_engine(spec, models)
                    alive.append(llm)
                    started.append(
                        (spec.window, decoders, runner_record(llm.llm_engine.vllm_config, spec.plugin))
                    )
            measured = measure(
                {name: decode for _, decoders, _ in started for name, decode in decoders.items()},
                phase.prompts,
                phase.accuracy_prompts,
                phase.batch_sizes,
                group.rounds,
                lambda: PowerMeter(phase.meter_interval),
            )
        finally:
            for llm in alive:
                llm.llm_engine.engine_core.shutdown()
        rounds += measured.rounds
        parts += [(window, measured.only(list(decoders), runner)) for window, decoders, runner in started]
    by_window: dict[int, Measured] = {}
    for window, part in parts:
        by_window[window] = by_window[window].merged(part) if window in by_window else part
    return by_window, rounds


def plugin_hooked() -> bool:
    """Whether this process already carries the plugin's frontend hook (vLLM's engine arguments wrapped)."""
    from vllm.engine.arg_utils import EngineArgs

    from autojudge.vllm_plugin.patches import is_patched

    return is_patched(EngineArgs.create_engine_config)
