"""The vLLM benchmark's plan, plain data built before any engine starts: the models every engine starts
from, the prompts, every setting and the windows it may run at, and the phases that time them (which engines
live together, and the order of every round); the checks that refuse a plan that cannot produce its
figures, and the header that records what was run."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from autojudge.bench.vllm_settings import (
    EXACT,
    OVERHEAD,
    OVERHEAD_SETTING,
    STOCK,
    TARGET,
    Recommendation,
    WindowsOf,
    compared_correct,
    head_points,
    recommendations,
    runs_at,
    speculative_settings,
)
from autojudge.errors import InputError
from autojudge.params import bench_plan_problems

Prompts = list[list[int]]


@dataclass(frozen=True)
class Models:
    """What every engine of the benchmark starts from, and how it decodes."""

    target: str
    draft: str | None
    proposer: str  # vLLM's speculative method: draft_model, eagle or ngram
    dtype: str
    max_model_len: int
    tensor_parallel_size: int
    engine_kwargs: dict[str, Any]  # mining.vllm's, passed to every vllm.LLM
    in_process: bool  # engines in this process (never with engines alive together)
    max_new_tokens: int
    eos: frozenset[int]


@dataclass(frozen=True)
class EngineSpec:
    """An engine to start: the target alone (window 0), stock SD (no plugin), or a plugin engine started with
    ``rule`` serving ``settings`` (name -> request override; None: the engine's own config)."""

    window: int
    plugin: bool
    rule: dict[str, Any] | None
    settings: dict[str, dict[str, Any] | None]


Round = tuple[bool, list[str]]  # (a tuning round, the settings in the order it runs them)


@dataclass(frozen=True)
class Group:
    """Engines alive together, started in order, and the rounds that time every setting they serve."""

    engines: list[EngineSpec]
    rounds: list[Round]


@dataclass(frozen=True)
class Phase:
    """Groups that run one after another on the same problems (each a warm-up, its rounds, an untimed decode
    of ``accuracy_prompts``), at ``batch_sizes``."""

    groups: list[Group]
    prompts: Prompts
    accuracy_prompts: Prompts
    batch_sizes: list[int]
    meter_interval: float


@dataclass(frozen=True)
class BenchPlan:
    """Everything the benchmark runs: ``windows_of`` every setting's windows to choose from (the target
    alone: [0]), ``on_plugin`` the plugin engine's request overrides, ``own_engine`` the recommendations'
    served configs that need engines of their own, ``head_rule`` the plugin engine's config."""

    bench: Any  # BenchParams
    models: Models
    windows_of: WindowsOf
    on_plugin: dict[str, dict[str, Any] | None]
    own_engine: dict[str, dict[str, Any]]
    head_rule: dict[str, Any]
    prompts: Prompts  # the timed problems
    tuning_prompts: Prompts  # windows tuned first: the problems right after the timed ones
    accuracy_prompts: Prompts
    recommended: list[Recommendation]
    head: dict[str, Any]  # path, threshold, chosen_thresholds (the comparison's points), features
    compared: dict[str, tuple[str, list[bool]]]  # the comparison's decodes (vllm_settings.compared_correct)


def make_plan(
    params: Any, head_path: str, head: Any, comparison: dict[str, Any], prompts: Prompts, eos: set[int]
) -> BenchPlan:
    """The plan of ``params.bench`` for the checked ``head``; ``prompts``: the split's first
    :func:`problems_needed`, encoded; ``comparison`` (``compare.json``, or empty) adds the head's chosen
    points and the recommendations."""
    bench, vllm = params.bench, params.mining.vllm
    recommended = recommendations(comparison.get("serving", {}), head_path)
    chosen = head_points(comparison)
    thresholds = [head.threshold, *bench.thresholds, *chosen]
    on_plugin = {s.name: s.override for s in [*speculative_settings(thresholds), OVERHEAD_SETTING]}
    on_plugin |= {r.setting.name: r.setting.override for r in recommended if not r.own_engine}
    windows_of: WindowsOf = {
        TARGET: [0],
        **{name: list(bench.windows) for name in [STOCK, *on_plugin]},
        **{r.setting.name: [w for w in bench.windows if runs_at(r.config, w)] for r in recommended},
        OVERHEAD: [bench.overhead_window],
    }
    models = Models(
        str(params.pair.target),
        str(params.pair.draft) if params.pair.draft else None,
        params.pair.proposer,
        params.pair.dtype,
        vllm.max_model_len,
        vllm.tensor_parallel_size,
        dict(vllm.engine_kwargs),
        vllm.in_process and not bench.engines_together,  # engines alive together: each in its own processes
        params.decoding.max_new_tokens,
        frozenset(eos),
    )
    return BenchPlan(
        bench,
        models,
        windows_of,
        on_plugin,
        {r.setting.name: r.config for r in recommended if r.own_engine},
        {"rule": "judge", "judge_head": head_path},
        prompts[: bench.problems],
        prompts[bench.problems : bench.problems + bench.tuning_problems]
        if tunes_windows_first(bench)
        else [],
        prompts[: bench.accuracy_problems],
        recommended,
        {
            "path": head_path,
            "threshold": head.threshold,
            "chosen_thresholds": chosen,
            "features": head.features.source,
        },
        compared_correct(comparison, thresholds, recommended),
    )


def plan_engines(
    windows_of: WindowsOf,
    on_plugin: dict[str, dict[str, Any] | None],
    own_engine: dict[str, dict[str, Any]],
    head_rule: dict[str, Any],
) -> list[EngineSpec]:
    """The engines that run each setting at its windows: the target alone, stock SD's, then per window the
    plugin engine (``head_rule``) with its request-override settings ``on_plugin`` and an engine per
    ``own_engine`` config. Stock engines come first, before the plugin's hook enters the process."""

    def at(name: str, window: int) -> bool:
        return window in windows_of.get(name, [])

    engines = [EngineSpec(0, False, None, {TARGET: None})] if TARGET in windows_of else []
    engines += [EngineSpec(w, False, None, {STOCK: None}) for w in windows_of.get(STOCK, [])]
    for w in sorted({w for ws in windows_of.values() for w in ws if w}):
        plugin = {name: override for name, override in on_plugin.items() if at(name, w)}
        if plugin:
            engines.append(EngineSpec(w, True, head_rule, plugin))
        engines += [
            EngineSpec(w, True, rule, {name: None}) for name, rule in own_engine.items() if at(name, w)
        ]
    return engines


def tuning_phases(plan: BenchPlan) -> list[tuple[int, Phase]]:
    """With windows tuned first (:func:`tunes_windows_first`), one phase per window: every engine of that
    window alive together, ``tuning_repeats`` tuning rounds at batch size 1 on the tuning problems."""
    if not tunes_windows_first(plan.bench):
        return []
    phases = []
    for window, windows_of in tuning_windows(plan.windows_of):
        engines = plan_engines(windows_of, plan.on_plugin, plan.own_engine, plan.head_rule)
        names = [name for engine in engines for name in engine.settings]
        rounds = plan_rounds(names, plan.bench.tuning_repeats, 0, plan.bench.seed)
        group = Group(engines, rounds)
        phases.append((window, Phase([group], plan.tuning_prompts, [], [1], plan.bench.meter_interval)))
    return phases


def timed_phase(plan: BenchPlan, windows_of: WindowsOf) -> Phase:
    """The timed phase of every setting at ``windows_of`` (the plan's grid, or each setting's tuned window):
    engines one after another, each with its own rounds (the target alone takes no tuning round), or with
    ``engines_together`` all alive at once in one group."""
    bench = plan.bench
    engines = plan_engines(windows_of, plan.on_plugin, plan.own_engine, plan.head_rule)
    tuning = 0 if tunes_windows_first(bench) else tuning_passes(bench)  # tuned first: none here

    def group(members: list[EngineSpec], tuning: int) -> Group:
        names = [name for engine in members for name in engine.settings]
        return Group(members, plan_rounds(names, tuning, bench.repeats, bench.seed))

    if bench.engines_together:
        groups = [group(engines, tuning)]
    else:
        groups = [group([engine], tuning if engine.window else 0) for engine in engines]
    sizes = sorted(bench.batch_sizes)
    return Phase(groups, plan.prompts, plan.accuracy_prompts, sizes, bench.meter_interval)


def tuning_windows(windows_of: WindowsOf) -> Iterator[tuple[int, WindowsOf]]:
    """The tuning phases' settings, one window at a time: each window with the settings that run at it
    (neither the target alone nor the judge-overhead setting, which has no window of its own to choose)."""
    tuned = {name: ws for name, ws in windows_of.items() if name not in (TARGET, OVERHEAD)}
    for window in sorted({w for ws in tuned.values() for w in ws}):
        yield window, {name: [window] for name, ws in tuned.items() if window in ws}


def timed_windows(chosen: dict[str, int]) -> WindowsOf:
    """The timed phase's settings after tuning: the target alone, and every setting at its chosen window;
    the judge-overhead setting at exact SD's (the two are compared step for step)."""
    return {TARGET: [0], **{name: [w] for name, w in chosen.items()}, OVERHEAD: [chosen[EXACT]]}


ROUND_ORDER = (
    "one seeded order of the settings, rotated by an evenly spread offset every two rounds and reversed in "
    "every second round: each pair of rounds gives every setting the same mean position, and 2 x settings "
    "rounds put every setting at every position twice"
)


def round_orders(names: Sequence[str], rounds: int, seed: int) -> list[list[str]]:
    """The order of ``names`` in each of ``rounds`` rounds (:data:`ROUND_ORDER`), so that a setting's place
    in a round (the machine warming, the load drifting) is not confounded with the setting."""
    base = list(names)
    random.Random(seed).shuffle(base)
    pairs = (rounds + 1) // 2
    orders = []
    for index in range(rounds):
        offset = (index // 2) * len(base) // pairs
        rotated = base[offset:] + base[:offset]
        orders.append(rotated if index % 2 == 0 else rotated[::-1])
    return orders


def plan_rounds(names: Sequence[str], tuning: int, repeats: int, seed: int) -> list[Round]:
    """The tuning rounds then the timed ones, each group's orders balanced on its own."""
    return [(True, order) for order in round_orders(names, tuning, seed)] + [
        (False, order) for order in round_orders(names, repeats, seed)
    ]


def check_plan(bench: Any, split_problems: int | None = None) -> None:
    """Refuse a benchmark plan that cannot produce its figures (``split_problems``: what the split holds)."""
    problems = bench_plan_problems(bench)
    needed = problems_needed(bench)
    if split_problems is not None and split_problems < needed:
        tuning = f" and bench.tuning_problems {bench.tuning_problems}" if tunes_windows_first(bench) else ""
        problems.append(
            f"bench.problems {bench.problems}, bench.accuracy_problems {bench.accuracy_problems}{tuning} need "
            f"{needed} problems, but split {bench.split!r} has {split_problems}"
        )
    if problems:
        raise InputError("; ".join(problems))


def tunes_windows_first(bench: Any) -> bool:
    """Whether each setting's window is chosen on tuning phases before the timed phase
    (:mod:`autojudge.bench.window_tuning`): every engine alive together, and several windows."""
    return bool(bench.engines_together) and len(bench.windows) > 1


def problems_needed(bench: Any) -> int:
    """Problems the benchmark reads from its split: the timed and accuracy ones, and with windows tuned first
    the ``tuning_problems`` right after the timed ones."""
    tuning = bench.tuning_problems if tunes_windows_first(bench) else 0
    return max(bench.problems + tuning, bench.accuracy_problems)


def tuning_passes(bench: Any) -> int:
    """Tuning passes per setting: ``bench.tuning_repeats``, or none when ``bench.windows`` leaves nothing to choose."""
    return bench.tuning_repeats if len(bench.windows) > 1 else 0


def header(bench: Any, problems: int, accuracy_problems: int) -> dict[str, Any]:
    """What was run, on which machine, when."""
    from autojudge.bench.machine import processor_name

    return {
        "benchmark": (
            "vLLM tokens/s: target alone, stock SD, the control (plugin exact SD), the rules; windows chosen on "
            "tuning passes, rounds in rotated orders"
        ),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": processor_name(),
        "problems": problems,
        "accuracy_problems": accuracy_problems,
        "windows": list(bench.windows),
        "batch_sizes": sorted(bench.batch_sizes),
        "tuning_repeats": tuning_passes(bench),
        "repeats": bench.repeats,
        "bootstrap_samples": bench.bootstrap_samples,
        "seed": bench.seed,
        "round_order": {"scheme": ROUND_ORDER, "seed": bench.seed},
    }
