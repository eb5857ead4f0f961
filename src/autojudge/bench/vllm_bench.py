"""Tokens/s with vLLM: target alone, stock vLLM SD, plugin exact SD and AutoJudge at several thresholds.

Protocol (the AutoJudge paper, section 4.3 and appendix G, with an honest baseline):

* Baselines: the target alone and **stock vLLM speculative decoding** (``sd_stock``: the same
  draft-model SD with the autojudge plugin not loaded in the engine's processes). ``sd_exact`` is
  the plugin's exact rule (the same tokens; what the plugin itself costs). Headline ratios are
  against ``sd_stock``; exact against stock is reported too.
* Settings: besides the baselines, the registered head at its own threshold, at ``bench.thresholds`` and
  at the points the comparison chose for it, and the comparison's recommendation at each budget as it is
  served (:func:`autojudge.bench.vllm_plan.recommendations`: a request override on the plugin engine, or an
  engine of its own started with the served config when the rule reads the drafter's logits or another
  head).
* Every speculative setting runs at every window of ``windows`` (the grid starts at 1; FLy where its
  deferred window fits). Each
  setting's window is chosen per batch size by the median tokens/s of its ``tuning_repeats``
  passes only; the figures reported for it come from its other ``repeats`` passes at that window,
  so the choice and the report use different repeats (a window picked on the timed passes would
  favour whichever window got lucky); with one window there is nothing to choose and no tuning pass).
  With ``engines_together``, one window per setting, chosen at batch size 1 on tuning passes of the
  ``tuning_problems`` problems after the timed ones, before the timed phase
  (:mod:`autojudge.bench.window_tuning`).
* Batch sizes ``batch_sizes`` (requests per ``generate`` call; 1 is always one of them).
* Per engine: one untimed warm-up batch per setting (the largest batch size of the pass: 1 in
  tuning passes), then
  ``tuning_repeats + repeats`` rounds, each timing one pass of every setting at every batch size,
  interleaved so that machine load hits all of them alike. Reported: median tokens/s and seconds per
  problem (median pass seconds / problems).
* At batch size 1 each problem is timed on its own. The tokens/s ratio of every setting over
  ``sd_stock`` (and over the target alone; MAT and step-time ratios alike) is the ratio of summed
  tokens over summed seconds of per-problem medians over the timed repeats, with a 95% paired
  bootstrap interval over problems (:mod:`autojudge.evaluation.stats`, seeded). Batched passes time batches,
  not problems: they give tokens/s and seconds per problem, and no ratio.
* Accuracy: the first ``accuracy_problems`` problems of the split, decoded once per setting and
  window (untimed, at the largest batch size) and scored by the task; a setting's accuracy is at
  its batch-size-1 window. Its drop against the target alone and against ``sd_stock`` carries a
  paired bootstrap interval.
* A winner (the fastest setting at batch size 1; faster or slower than stock SD) is named only
  when its interval excludes 1; otherwise the report says "not distinguishable".
* GPU energy of every timed pass by :class:`~autojudge.bench.energy.PowerMeter` (or why not).

Engines: starts dominate on CPU, so there is one engine for the target alone and two per window
(plus one per recommendation that needs its own). The plugin engine serves every plugin setting as a
per-request rule override (``exact``, or ``judge`` at a threshold; see :mod:`autojudge.vllm_plugin.engine`).
The target-alone and stock engines start first, with ``VLLM_PLUGINS=""`` and before this process loads
the plugin's hook (:func:`autojudge.vllm_plugin.register`, called once they are done), so no process of
theirs carries it; the plugin engines follow. Engines run in this process when ``mining.vllm.in_process``
says so (one device; on 2 CPU cores an engine starts in about 6 s instead of 38 s), otherwise vLLM
spawns their processes. With ``bench.engines_together`` every engine starts in processes of
its own, stock ones first, and all stay alive while every setting's passes interleave with all the
others, so that a ratio between engines (a recommendation on its own engine over stock SD) compares the
same minutes of the machine, as a ratio within one engine does; with several windows, each setting's
window is first chosen on short tuning passes, one window's engines at a time
(:mod:`autojudge.bench.window_tuning`), and only the chosen windows are timed. Stock engines get vLLM's default model runner (``VLLM_USE_V2_MODEL_RUNNER`` as the
caller set it, or unset), plugin engines the V1 runner the plugin needs: every setting records its
engine's runner, worker class and plugin state.

The judge's cost: step time of ``judge`` at threshold 0 (it accepts no mismatch, so it emits
exactly exact SD's tokens but computes the head at every step) against ``exact``, same engine.
Where AutoJudge's speedup is small, the step times explain it: a fit of stock SD's step time over
the windows gives the drafter's cost per draft token and the fixed (target verification) cost.

This module starts the engines and runs the protocol; :mod:`autojudge.bench.vllm_plan` holds the
settings and the plan's checks, :mod:`autojudge.bench.vllm_measure` the timed passes,
:mod:`autojudge.bench.vllm_analysis` the figures and :mod:`autojudge.bench.vllm_report` the tables
and output files.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import reduce
from pathlib import Path
from typing import Any

from autojudge.bench.energy import PowerMeter
from autojudge.bench.vllm_analysis import build_report
from autojudge.bench.vllm_measure import DecodeFn, Measured, measure
from autojudge.bench.vllm_plan import (
    OVERHEAD,
    OVERHEAD_SETTING,
    STOCK,
    TARGET,
    WindowsOf,
    check_plan,
    head_points,
    header,
    plan_engines,
    problems_needed,
    recommendations,
    runs_at,
    speculative_settings,
    tunes_windows_first,
    tuning_passes,
)
from autojudge.bench.window_tuning import timed_windows, tune_windows
from autojudge.errors import AutoJudgeError

PLUGIN_ENABLED = "loaded, enabled"
PLUGIN_NOT_LOADED = "not loaded"
EngineStart = Callable[[], tuple[Any, dict[str, DecodeFn]]]  # an engine started, its decoders by setting


def _eos_token_ids(target: Path, tokenizer: Any) -> set[int]:
    """The pair's EOS ids (`autojudge.models.tokenizer.eos_token_ids`) without loading the weights."""
    from transformers import GenerationConfig

    from autojudge.models.tokenizer import eos_token_ids

    try:
        generation_eos = GenerationConfig.from_pretrained(str(target)).eos_token_id
    except OSError:  # no generation_config.json
        generation_eos = None
    return eos_token_ids(tokenizer, generation_eos)


# Environment variables an engine start may change or read; restored after every start.
ENGINE_ENVIRONMENT = ("VLLM_PLUGINS", "VLLM_WORKER_MULTIPROC_METHOD", "VLLM_USE_V2_MODEL_RUNNER")


@contextmanager
def engine_environment(plugin: bool) -> Iterator[None]:
    """The environment an engine starts in: vLLM's processes spawned, not forked; without ``plugin``, no general
    plugin loaded.

    vLLM reads ``VLLM_PLUGINS`` in the engine-core and worker processes it starts during the
    engine's construction, so it only needs to be set while the engine starts. The variables the
    plugin reads (``AUTOJUDGE_VLLM_*``) are removed for an engine without it, and every variable is
    restored afterwards (``speculative_llm`` sets ``VLLM_USE_V2_MODEL_RUNNER=0`` for plugin engines
    only, so a stock engine gets vLLM's default runner).
    """
    names = [*ENGINE_ENVIRONMENT, *(name for name in os.environ if name.startswith("AUTOJUDGE_VLLM_"))]
    saved = {name: os.environ.get(name) for name in names}
    os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"
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


def run_benchmark(params: Any, head_path: Path, comparison: dict[str, Any] | None = None) -> dict[str, Any]:
    """Start the engines of ``params.bench``, measure every setting, and return the report; ``comparison``
    (``compare.json``) adds the head at its chosen points and each recommended rule at its chosen point, as
    a request override on the plugin engine or on an engine started with its served config."""
    bench, vllm = params.bench, params.mining.vllm
    check_plan(bench)
    from autojudge.engines.vllm_engine import VllmEngine
    from autojudge.models.prompts import encode_prompt
    from autojudge.models.runtime import task_from
    from autojudge.models.tokenizer import load_tokenizer
    from autojudge.vllm_plugin.engine import decode, speculative_llm
    from autojudge.vllm_plugin.heads import hidden_size, load_checked_head

    target_dir, draft_dir = params.pair.target, params.pair.draft
    # refuse a head the plugin cannot use before any engine starts
    head = load_checked_head(str(head_path), target_dir, hidden_size(target_dir), params.pair.proposer)
    task = task_from(params)
    examples = task.load_split(bench.split, problems_needed(bench))
    check_plan(bench, len(examples))
    tokenizer = load_tokenizer(params.pair.target, "target")
    prompts = [encode_prompt(tokenizer, task.build_prompt(e), params.pair.chat_template) for e in examples]
    timed, accuracy_prompts = prompts[: bench.problems], prompts[: bench.accuracy_problems]
    tuning_prompts = prompts[bench.problems : bench.problems + bench.tuning_problems]  # never timed
    eos = _eos_token_ids(params.pair.target, tokenizer)
    max_new = params.decoding.max_new_tokens
    sizes = sorted(bench.batch_sizes)
    engine_kwargs = {"tensor_parallel_size": vllm.tensor_parallel_size, **vllm.engine_kwargs}

    def meter() -> PowerMeter:
        return PowerMeter(bench.meter_interval)

    def run(decoders: dict[str, DecodeFn], tuning: int) -> Measured:
        return measure(decoders, timed, accuracy_prompts, sizes, tuning, bench.repeats, meter)

    def spec_llm(window: int, rule_config: dict[str, Any] | None, in_process: bool) -> Any:
        return speculative_llm(
            target_dir,
            draft_dir,
            window,
            rule_config,
            engine_kwargs,
            params.pair.dtype,
            vllm.max_model_len,
            in_process=in_process,
            method=params.pair.proposer,
        )

    started, load_before = time.perf_counter(), os.getloadavg()[0]
    together = bench.engines_together
    in_process = vllm.in_process and not together  # engines alive together: each in its own processes
    if in_process and plugin_hooked():
        raise AutoJudgeError("bench: the plugin is already loaded in this process; run it in a fresh one")

    def target_engine() -> tuple[Any, dict[str, DecodeFn]]:
        engine = VllmEngine(
            target_dir,
            params.pair.dtype,
            eos,
            vllm.max_model_len,
            vllm.tensor_parallel_size,
            engine_kwargs=vllm.engine_kwargs,
            in_process=in_process,
        )
        decode_target: DecodeFn = lambda batch: [  # noqa: E731 -- a target pass per token
            (tokens, len(tokens)) for tokens in engine.continue_prefixes(list(batch), [max_new] * len(batch))
        ]
        return engine.llm, {TARGET: decode_target}

    def spec_engine(window: int, rule: dict | None, settings: dict[str, dict | None]) -> EngineStart:
        def start() -> tuple[Any, dict[str, DecodeFn]]:
            llm = spec_llm(window, rule, in_process)
            return llm, {
                name: _speculative_decoder(decode, llm, max_new, eos, o) for name, o in settings.items()
            }

        return start

    recommended = recommendations((comparison or {}).get("serving", {}), str(head_path))
    head_chosen = head_points(comparison or {})
    plugin_settings = speculative_settings([head.threshold, *bench.thresholds, *head_chosen])
    head_rule = {"rule": "judge", "judge_head": str(head_path)}
    on_plugin = {s.name: s.override for s in [*plugin_settings, OVERHEAD_SETTING]}
    on_plugin |= {r.setting.name: r.setting.override for r in recommended if not r.own_engine}
    own_engine = {r.setting.name: r.config for r in recommended if r.own_engine}

    def engine_plan(windows_of: WindowsOf) -> list[tuple[int, bool, EngineStart]]:
        return [
            (e.window, e.plugin, spec_engine(e.window, e.rule, e.settings) if e.window else target_engine)
            for e in plan_engines(windows_of, on_plugin, own_engine, head_rule)
        ]

    windows_of: WindowsOf = {
        TARGET: [0],
        **{name: list(bench.windows) for name in [STOCK, *on_plugin]},
        **{r.setting.name: [w for w in bench.windows if runs_at(r.config, w)] for r in recommended},
        OVERHEAD: [bench.overhead_window],
    }
    tuning, engine_starts = None, 0
    if tunes_windows_first(bench):  # each setting's window first (autojudge.bench.window_tuning)

        def run_tuning(decoders: dict[str, DecodeFn], repeats: int) -> Measured:
            return measure(decoders, tuning_prompts, [], [1], repeats, 0, meter)

        def measure_window(settings: WindowsOf) -> Measured:
            nonlocal engine_starts
            engines = engine_plan(settings)
            engine_starts += len(engines)
            measured = measure_engines(engines, run_tuning, bench.tuning_repeats, together=True)
            return reduce(Measured.merged, (m for _, m in measured))

        tuning = tune_windows(
            windows_of, measure_window, len(tuning_prompts), bench.problems, bench.tuning_repeats
        )
        windows_of = timed_windows(tuning.chosen())
        bench = bench.model_copy(update={"overhead_window": windows_of[OVERHEAD][0]})
    engines = engine_plan(windows_of)
    by_window: dict[int, Measured] = {}
    timed_tuning = 0 if tuning else tuning_passes(bench)
    for window, measured in measure_engines(engines, run, timed_tuning, together):
        by_window[window] = by_window[window].merged(measured) if window in by_window else measured
    target = by_window.pop(0)
    report = header(bench, len(timed), len(accuracy_prompts))
    report.update(
        build_report(
            task, tokenizer, examples[: bench.accuracy_problems], target, by_window, head.threshold, bench
        )
    )
    report["pair"], report["task"] = params.pair.name, params.task.name
    report["head"] = {
        "path": str(head_path),
        "threshold": head.threshold,
        "chosen_thresholds": head_chosen,  # the comparison's points for it, one per budget
        "features": head.features.source,
    }
    report["runtime_seconds"] = round(time.perf_counter() - started, 1)
    report["cpus"], report["load_average_1m"] = os.cpu_count(), [load_before, os.getloadavg()[0]]
    report["recommendations"] = {
        r.setting.name: {
            "budgets_points": list(r.budgets),
            "method": r.method,
            "compare_setting": r.compare_setting,
            "served_config": r.config,
            "own_engine": r.own_engine,
        }
        for r in recommended
        if r.setting.name in report["settings"]
    }
    report["engine_starts"], report["engines_together"] = engine_starts + len(engines), together
    if tuning is not None:
        report["window_tuning"] = tuning.report()
    return report


def measure_engines(
    engines: list[tuple[int, bool, EngineStart]], run: Callable[..., Measured], tuning: int, together: bool
) -> Iterator[tuple[int, Measured]]:
    """(window, what its settings measured) per engine of ``engines`` (``(window, plugin, start)``, started in
    order; the plugin's hook enters this process before the first plugin engine). One engine after another,
    each shut down after its settings' interleaved passes (the target alone, window 0, takes no tuning
    passes); or ``together``: every engine alive at once and every setting's passes interleaved with all
    the others."""
    from autojudge.vllm_plugin import register

    alive: list[Any] = []
    waiting: list[tuple[int, dict[str, DecodeFn], dict[str, str]]] = []  # together: started, not yet run
    try:
        for window, plugin, start in engines:
            if plugin:
                register()  # the plugin's frontend hook in this process (once)
            with engine_environment(plugin):
                llm, decoders = start()
                alive.append(llm)
                runner = runner_record(llm.llm_engine.vllm_config, plugin)
            if together:
                waiting.append((window, decoders, runner))
                continue
            try:
                measured = run(decoders, tuning if window else 0)
            finally:
                alive.pop().llm_engine.engine_core.shutdown()
            measured.runners = dict.fromkeys(decoders, runner)
            yield window, measured
        if together:
            measured = run({name: d for _, decoders, _ in waiting for name, d in decoders.items()}, tuning)
            for window, decoders, runner in waiting:
                yield window, measured.only(list(decoders), runner)
    finally:
        for llm in alive:
            llm.llm_engine.engine_core.shutdown()


def plugin_hooked() -> bool:
    """Whether this process already carries the plugin's frontend hook (vLLM's engine arguments wrapped)."""
    from vllm.engine.arg_utils import EngineArgs

    from autojudge.vllm_plugin.patches import is_patched

    return is_patched(EngineArgs.create_engine_config)


def _speculative_decoder(
    decode: Callable[..., Any], llm: Any, max_new: int, eos: set[int], override: dict[str, Any] | None
) -> DecodeFn:
    return lambda batch: [
        (r.tokens, r.target_passes) for r in decode(llm, batch, max_new, eos, override=override)
    ]
