"""Tokens/s with vLLM: target alone, stock vLLM SD, plugin exact SD and AutoJudge at several thresholds.

Protocol (the AutoJudge paper, section 4.3 and appendix G, with an honest baseline):

* Baselines: the target alone, **stock vLLM speculative decoding** (``sd_stock``: the same
  draft-model SD with the autojudge plugin not loaded in the engine's processes) and **the control**
  (``sd_exact``: the plugin's exact rule on the plugin engine, every draft token verified through the path
  of the lossy rules and none accepted beyond exact, so stock SD's tokens). Every run has both; the report
  gives (a) the control over stock SD (the path's cost: its interval contains 1.00, or the report names it
  the benchmark's bias), (b) each rule over the control (what its acceptances buy) and (c) each rule over
  stock SD.
* Settings: besides the baselines, the registered head at its own threshold, at ``bench.thresholds`` and
  at the points the comparison chose for it, and the comparison's recommendation at each budget as it is
  served (:func:`autojudge.bench.vllm_settings.recommendations`: a request override on the plugin engine, or an
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
  tuning passes), then ``tuning_repeats + repeats`` rounds, each timing one pass of every setting at
  every batch size, in the round's own order (:func:`autojudge.bench.vllm_plan.round_orders`: seeded by
  ``bench.seed``, rotated and reversed so that a setting's place in a round is not the setting), with the
  machine's 1-minute load at each round's start and end; ``bench.json`` records every round. Reported:
  median tokens/s and seconds per problem (median pass seconds / problems).
* At batch size 1 each problem is timed on its own. The tokens/s ratio of every setting over
  ``sd_stock`` (and over the target alone; MAT and step-time ratios alike) is the ratio of summed
  tokens over summed seconds of per-problem medians over the timed repeats, with a 95% paired
  bootstrap interval over problems (:mod:`autojudge.evaluation.stats`, seeded). Batched passes time batches,
  not problems: they give tokens/s and seconds per problem, and no ratio.
* Accuracy beside a timed setting: the comparison's test decode of the same setting (the rule at the same
  threshold; exact SD's for the lossless ones), with paired-bootstrap intervals, or none. The first
  ``accuracy_problems`` problems are also decoded once per setting and window (untimed, largest batch
  size): a check that the lossless settings emit the target's tokens, kept in ``bench.json``.
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
(:mod:`autojudge.bench.window_tuning`), and only the chosen windows are timed. Stock engines get vLLM's
default model runner (``VLLM_USE_V2_MODEL_RUNNER`` as the caller set it, or unset), plugin engines the V1
runner the plugin needs: every setting records its engine's runner, worker class and plugin state.

Threads: every spawned engine's CPU worker binds all of this process's cores
(``engines.vllm_engine.create_llm``) and starts with ``OMP_WAIT_POLICY=PASSIVE`` unless the caller set one.
Engines alive together do not decode together (each ``generate`` call returns before the next), so that is
no oversubscription: the idle ones sleep (toy pair, 2 cores: an idle engine used about 1% of a core while
another decoded, with either wait policy). ``bench.json`` records the threads
(:func:`autojudge.bench.vllm_engines.thread_record`) and each round's load.

The head's cost: step time of ``judge`` at threshold 0 (it accepts no mismatch, so it emits exactly the
control's tokens but computes the head at every step) against the control, same engine. It stays apart from
the control: a rule that reads no head (FSD, KL, entropy) must not be charged for one.
Where AutoJudge's speedup is small, the step times explain it: a fit of lossless SD's step time over
the windows (the timed passes, or with windows tuned first the tuning passes) gives the cost of one draft
token (a proposer step and a row to verify, for any proposer) and the fixed (target verification) cost;
``bench.json``'s ``step_cost`` puts the former against a step of the target alone, or says why there is no
fit (:func:`autojudge.bench.vllm_analysis.step_cost`).

One pass of plain data, each step a function of the previous one's output:
:func:`~autojudge.bench.vllm_plan.make_plan` (settings, windows, engines, round orders; before any engine
starts) -> :func:`~autojudge.bench.window_tuning.tune_windows` (with windows tuned first) ->
:func:`~autojudge.bench.vllm_engines.measure_phase` of the timed phase (engines started from their specs,
rounds timed by :mod:`autojudge.bench.vllm_measure`) -> the check decode scored here ->
:func:`~autojudge.bench.vllm_analysis.build_report` -> :mod:`autojudge.bench.vllm_report` (prose, tables
from :mod:`autojudge.bench.vllm_tables`, output files). :mod:`autojudge.bench.vllm_settings` names what is
timed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from autojudge.bench.vllm_analysis import Correct, build_report
from autojudge.bench.vllm_engines import measure_phase, plugin_hooked, thread_record
from autojudge.bench.vllm_measure import Measured
from autojudge.bench.vllm_plan import (
    BenchPlan,
    Phase,
    check_plan,
    header,
    make_plan,
    problems_needed,
    timed_phase,
    timed_windows,
    tunes_windows_first,
    tuning_phases,
)
from autojudge.bench.vllm_settings import TARGET
from autojudge.bench.window_tuning import tune_windows
from autojudge.errors import AutoJudgeError


def _eos_token_ids(target: Path, tokenizer: Any) -> set[int]:
    """The pair's EOS ids (`autojudge.models.tokenizer.eos_token_ids`) without loading the weights."""
    from transformers import GenerationConfig

    from autojudge.models.tokenizer import eos_token_ids

    try:
        generation_eos = GenerationConfig.from_pretrained(str(target)).eos_token_id
    except OSError:  # no generation_config.json
        generation_eos = None
    return eos_token_ids(tokenizer, generation_eos)


def run_benchmark(params: Any, head_path: Path, comparison: dict[str, Any] | None = None) -> dict[str, Any]:
    """The benchmark of ``params.bench`` in one pass (the module's docstring); ``comparison``
    (``compare.json``) adds the head at its chosen points and each recommended rule at its chosen point."""
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    bench = params.bench
    check_plan(bench)
    from autojudge.models.prompts import encode_prompt
    from autojudge.models.runtime import task_from
    from autojudge.models.tokenizer import load_tokenizer
    from autojudge.vllm_plugin.heads import hidden_size, load_checked_head

    target_dir = params.pair.target
    # refuse a head the plugin cannot use before any engine starts
    head = load_checked_head(str(head_path), target_dir, hidden_size(target_dir), params.pair.proposer)
    task = task_from(params)
    examples = task.load_split(bench.split, problems_needed(bench))
    check_plan(bench, len(examples))
    tokenizer = load_tokenizer(target_dir, "target")
    prompts = [encode_prompt(tokenizer, task.build_prompt(e), params.pair.chat_template) for e in examples]
    eos = _eos_token_ids(target_dir, tokenizer)
    plan = make_plan(params, str(head_path), head, comparison or {}, prompts, eos)
    if plan.models.in_process and plugin_hooked():
        raise AutoJudgeError("bench: the plugin is already loaded in this process; run it in a fresh one")

    tuning = tune_windows(plan) if tunes_windows_first(bench) else None
    phase = timed_phase(plan, timed_windows(tuning.chosen()) if tuning else plan.windows_of)
    by_window, rounds = measure_phase(phase, plan.models)
    target = by_window.pop(0)
    scored = score_check_decode(task, tokenizer, examples[: bench.accuracy_problems], target, by_window)
    report = header(bench, len(plan.prompts), len(plan.accuracy_prompts))
    report |= build_report(plan, target, by_window, scored, tuning.step_ms if tuning else None)
    report |= {
        "pair": params.pair.name,
        "task": params.task.name,
        "head": plan.head,
        "runtime_seconds": round(time.perf_counter() - started, 1),
        "cpus": os.cpu_count(),
        "load_average_1m": [load_before, os.getloadavg()[0]],
        "recommendations": recommendation_record(plan, report["settings"]),
        "engine_starts": sum(_engines(p) for _, p in tuning_phases(plan)) + _engines(phase),
        "engines_together": bench.engines_together,
        "rounds": [record.report() for record in rounds],
        "threads": thread_record(plan.models.in_process, plan.models.tensor_parallel_size),
    }
    if tuning is not None:
        report["window_tuning"] = tuning.report()
    return report


def _engines(phase: Phase) -> int:
    return sum(len(group.engines) for group in phase.groups)


def score_check_decode(
    task: Any, tokenizer: Any, examples: list[Any], target: Measured, by_window: dict[int, Measured]
) -> Correct:
    """The check decode (the first ``accuracy_problems``, untimed, every setting and window) scored by the
    task's checker: setting -> window -> per problem (the target alone at window 0)."""

    def score(outputs: list[list[int]]) -> list[bool]:
        return [
            bool(task.score(tokenizer.decode(tokens, skip_special_tokens=True), example))
            for tokens, example in zip(outputs, examples, strict=True)
        ]

    scored: Correct = {TARGET: {0: score(target.accuracy[TARGET])}}
    for window, measured in by_window.items():
        for name, outputs in measured.accuracy.items():
            scored.setdefault(name, {})[window] = score(outputs)
    return scored


def recommendation_record(plan: BenchPlan, settings: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What each timed recommendation of the comparison is, and how it was served."""
    return {
        r.setting.name: {
            "budgets_points": list(r.budgets),
            "method": r.method,
            "compare_setting": r.compare_setting,
            "served_config": r.config,
            "own_engine": r.own_engine,
        }
        for r in plan.recommended
        if r.setting.name in settings
    }
