"""The vLLM benchmark's plan: its settings and their names, the checks that refuse a plan that cannot
produce its figures, and the header that records what was run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from autojudge.errors import InputError
from autojudge.params import bench_plan_problems

TARGET = "target"
STOCK = "sd_stock"
EXACT = "sd_exact"
OVERHEAD = "judge_t0"
WindowsOf = dict[str, list[int]]  # setting -> the windows it runs at (the target alone: [0])


@dataclass(frozen=True)
class Setting:
    """A decoding setting: a rule override on a plugin engine, or a stock engine's own decoding (None)."""

    name: str
    override: dict[str, Any] | None = None
    threshold: float | None = None


def speculative_settings(thresholds: Sequence[float]) -> list[Setting]:
    """The plugin engine's settings: exact SD and AutoJudge at each threshold (overriding the head's own)."""
    judge = [
        Setting(f"autojudge_t{t:.4g}", {"rule": "judge", "threshold": t}, t) for t in sorted(set(thresholds))
    ]
    return [Setting(EXACT, {"rule": "exact"}), *judge]


OVERHEAD_SETTING = Setting(OVERHEAD, {"rule": "judge", "threshold": 0.0}, 0.0)
RECOMMENDED = "recommended_"
ENGINE_ONLY_KEYS = ("judge_head", "judge_head_sha256")  # an engine's, not a request's


@dataclass(frozen=True)
class Recommendation:
    """The comparison's recommendation at some budgets, as the benchmark times it: ``config`` is the
    plugin config it is served with; ``own_engine``: it needs an engine started with that config (a rule
    that reads the drafter's logits, or another head), else it is a request override on the plugin engine."""

    setting: Setting
    budgets: tuple[str, ...]
    method: str
    compare_setting: str
    config: dict[str, Any]
    own_engine: bool


def recommendations(serving: dict[str, dict], head_path: str) -> list[Recommendation]:
    """The comparison's recommendations (``compare.json``'s ``serving``: budget -> recommended setting and
    its plugin config), once each; exact SD is stock SD, timed anyway."""
    from autojudge.rules.config import NEEDS_DRAFT_LOGITS

    by_setting: dict[str, list[str]] = {}
    for budget, entry in serving.items():
        if entry["autojudge"] is not None:
            by_setting.setdefault(entry["setting"], []).append(budget)
    found = []
    for compare_setting, budgets in by_setting.items():
        entry = serving[budgets[0]]
        config = dict(entry["autojudge"])
        other_head = config.get("judge_head") not in (None, head_path)
        own = other_head or config["rule"] in NEEDS_DRAFT_LOGITS
        override = None if own else {k: v for k, v in config.items() if k not in ENGINE_ONLY_KEYS}
        name = f"{RECOMMENDED}{'+'.join(budgets)}pt"
        found.append(
            Recommendation(
                Setting(name, override), tuple(budgets), entry["method"], compare_setting, config, own
            )
        )
    return found


@dataclass(frozen=True)
class EngineSpec:
    """An engine to start: the target alone (window 0), stock SD (no plugin), or a plugin engine started with
    ``rule`` serving ``settings`` (name -> request override; None: the engine's own config)."""

    window: int
    plugin: bool
    rule: dict[str, Any] | None
    settings: dict[str, dict[str, Any] | None]


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


def round_threshold(threshold: float) -> float:
    """A threshold as its AutoJudge setting's name writes it (4 significant digits)."""
    return float(f"{threshold:.4g}")


def threshold_of(name: str) -> float:
    """The threshold of an AutoJudge setting's name."""
    return float(name.removeprefix("autojudge_t"))


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
    """Whether each setting's window is chosen on tuning passes before the timed phase
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
        "benchmark": "vLLM tokens/s: target alone, stock SD, plugin exact SD, AutoJudge; windows chosen on tuning passes",
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
    }


def head_points(comparison: dict[str, Any]) -> list[float]:
    """The AutoJudge head's thresholds the comparison chose on validation (one per budget, once each)."""
    rows = {row["setting"]: row for row in comparison.get("validation", [])}
    names = {by_method.get("judge") for by_method in comparison.get("chosen", {}).values()}
    return sorted({rows[name]["threshold"] for name in names if name in rows})


def runs_at(config: dict[str, Any], window: int) -> bool:
    """Whether a served config can run with ``window`` draft tokens (FLy needs a window of 2 or more, and
    its deferred window below it)."""
    from autojudge.rules.config import fly_window

    if config["rule"] != "fly":
        return True
    try:
        fly_window(config.get("fly_window_size"), window)
    except InputError:
        return False
    return True
