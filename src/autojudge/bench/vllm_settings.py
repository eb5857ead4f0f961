"""What the vLLM benchmark times and what it calls it: the settings' names, the plugin engine's request
overrides, the comparison's recommendations and chosen points, and the comparison's decodes of the timed
settings (the accuracy shown beside them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from autojudge.errors import InputError

TARGET = "target"
STOCK = "sd_stock"
EXACT = "sd_exact"  # the control: the plugin's exact rule, through the verification core of the lossy rules
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


def round_threshold(threshold: float) -> float:
    """A threshold as its AutoJudge setting's name writes it (4 significant digits)."""
    return float(f"{threshold:.4g}")


def threshold_of(name: str) -> float:
    """The threshold of an AutoJudge setting's name."""
    return float(name.removeprefix("autojudge_t"))


def compared_correct(
    comparison: dict[str, Any], thresholds: Sequence[float], recommended: Sequence[Recommendation]
) -> dict[str, tuple[str, list[bool]]]:
    """Each timed setting the comparison decoded on its test split: name -> (the comparison's setting, its
    per-problem correctness); the target alone, stock and plugin exact SD (exact SD's decode), the head at
    ``thresholds`` it decoded, and each recommendation. Empty without a comparison or its target's decode."""
    decoded = comparison.get("problems", {}).get("test", {})
    if "target alone" not in decoded:
        return {}
    exact = next((c["exact"] for c in comparison.get("chosen", {}).values() if c.get("exact")), None)
    judge = {
        round_threshold(row["threshold"]): row["setting"]
        for row in comparison.get("validation", [])
        if row["method"] == "judge"
    }
    names = {TARGET: "target alone", STOCK: exact, EXACT: exact}
    names |= {f"autojudge_t{t:.4g}": judge.get(round_threshold(t)) for t in thresholds}
    names |= {r.setting.name: r.compare_setting for r in recommended}
    return {name: (c, decoded[c]["correct"]) for name, c in names.items() if c in decoded}


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
