"""Per-engine (and per-request) configuration of the autojudge vLLM plugin.

The plugin is off unless an engine asks for it, in one of two ways (the first wins):

* ``LLM(..., additional_config={"autojudge": {"rule": "topk", "top_k": 8}})`` — per engine.
  ``additional_config`` is a field of ``VllmConfig``, which every worker process receives, so
  this reaches the model runner wherever it runs. (``speculative_config`` cannot carry it:
  ``SpeculativeConfig`` is a pydantic dataclass with ``extra="forbid"``.) With ``vllm serve``:
  ``--additional-config '{"autojudge": {...}}'``.
* environment variables ``AUTOJUDGE_VLLM_RULE``, ``AUTOJUDGE_VLLM_TOP_K``,
  ``AUTOJUDGE_VLLM_JUDGE_HEAD``, ``AUTOJUDGE_VLLM_THRESHOLD``, ``AUTOJUDGE_VLLM_DIVERGENCE`` —
  process-wide; spawned engine/worker processes inherit the parent's environment.

On an engine that enabled the plugin, one request may override ``rule``, ``threshold``,
``top_k`` and ``divergence`` through ``SamplingParams(extra_args=...)``, either nested
(``{"autojudge": {"threshold": 0.5}}``) or flat (``{"autojudge_threshold": 0.5}``: the form
the OpenAI server's ``vllm_xargs`` can carry, since it passes no nested dicts). The judge head
stays the engine's, and ``divergence`` needs an engine whose own rule is ``divergence`` (only
then does the drafter keep its logits).

This module imports nothing heavy: vLLM's frontend imports it when it loads the plugin.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from autojudge.errors import InputError

Rule = Literal["exact", "topk", "judge", "divergence", "fly"]

CONFIG_KEY = "autojudge"
ENV_PREFIX = "AUTOJUDGE_VLLM_"
FLAT_PREFIX = CONFIG_KEY + "_"  # flat request keys: autojudge_rule, autojudge_threshold, ...
DIVERGENCES = ("js", "kl", "tv")  # autojudge.decoding.divergence.DIVERGENCES (checked by a test)
# judge_head_sha256 pins the head file: the frontend writes it when it resolves judge_head.
FLY_KEYS = ("fly_window_size", "fly_entropy_threshold", "fly_entropy_top_k")  # vLLM upstream's names
KEYS = ("rule", "top_k", "judge_head", "judge_head_sha256", "threshold", "divergence", *FLY_KEYS)
REQUEST_KEYS = ("rule", "top_k", "threshold", "divergence", *FLY_KEYS)


@dataclass(frozen=True)
class PluginConfig:
    """Which acceptance rule verification uses, with its parameters."""

    rule: Rule
    top_k: int | None = None
    judge_head: str | None = None  # a head file/directory or an MLflow URI ``models:/name@alias``
    judge_head_sha256: str | None = None  # the pinned head file's content hash (set by the frontend)
    threshold: float | None = None  # judge: overrides the head's own; divergence: required
    divergence: str = "kl"
    # rule "fly" (autojudge.decoding.fly): vLLM upstream's keys and defaults
    fly_window_size: int = 6
    fly_entropy_threshold: float = 0.3
    fly_entropy_top_k: int = 3

    def __post_init__(self) -> None:
        if self.rule not in get_args(Rule):
            raise InputError(f"autojudge: unknown rule {self.rule!r}; expected one of {get_args(Rule)}")
        if self.rule == "topk" and (self.top_k is None or self.top_k < 1):
            raise InputError(f"autojudge: rule 'topk' needs top_k >= 1, got {self.top_k}")
        if self.rule == "judge" and not self.judge_head:
            raise InputError("autojudge: rule 'judge' needs judge_head (a head file or models:/name@alias)")
        if self.divergence not in DIVERGENCES:
            raise InputError(
                f"autojudge: unknown divergence {self.divergence!r}; expected one of {sorted(DIVERGENCES)}"
            )
        if self.rule == "divergence" and self.threshold is None:
            raise InputError("autojudge: rule 'divergence' needs a threshold")
        if self.fly_window_size < 0 or self.fly_entropy_top_k < 1 or not self.fly_entropy_threshold >= 0:
            raise InputError(
                "autojudge: fly needs fly_window_size >= 0, fly_entropy_top_k >= 1 and fly_entropy_threshold >= 0"
            )
        if self.threshold is not None and not math.isfinite(self.threshold):
            raise InputError(f"autojudge: threshold must be finite, got {self.threshold}")

    def describe(self) -> str:
        if self.rule == "topk":
            return f"topk(k={self.top_k})"
        if self.rule == "judge":
            return f"judge(head={self.judge_head}, threshold={self.threshold})"
        if self.rule == "divergence":
            return f"divergence({self.divergence} < {self.threshold})"
        if self.rule == "fly":
            return (
                f"fly(entropy_top{self.fly_entropy_top_k} >= {self.fly_entropy_threshold}, "
                f"window={self.fly_window_size})"
            )
        return self.rule


def _parse(raw: Mapping[str, Any], allowed: tuple[str, ...], origin: str) -> dict[str, Any]:
    """Typed values of the keys of ``raw`` (empty strings count as unset)."""
    unknown = set(raw) - set(allowed)
    if unknown:
        raise InputError(f"autojudge: unknown keys {sorted(unknown)} in {origin}; allowed: {list(allowed)}")
    converters = {
        "rule": str,
        "top_k": int,
        "judge_head": str,
        "judge_head_sha256": str,
        "threshold": float,
        "divergence": str,
        "fly_window_size": int,
        "fly_entropy_threshold": float,
        "fly_entropy_top_k": int,
    }
    try:
        return {key: converters[key](value) for key, value in raw.items() if value not in (None, "")}
    except (TypeError, ValueError) as exc:
        raise InputError(f"autojudge: bad value in {origin}: {exc}") from exc


def parse_config(raw: Mapping[str, Any], origin: str = f"additional_config[{CONFIG_KEY!r}]") -> PluginConfig:
    """An engine's config from a mapping with the keys in ``KEYS``."""
    if not isinstance(raw, Mapping):
        raise InputError(f"autojudge: {origin} must be a dict, got {type(raw).__name__}")
    values = _parse(raw, KEYS, origin)
    if "rule" not in values:
        raise InputError(f"autojudge: {origin} must name a 'rule'")
    return PluginConfig(**values)


def resolve_config(additional_config: object, environ: Mapping[str, str]) -> PluginConfig | None:
    """The engine's plugin config: ``additional_config["autojudge"]``, else env vars, else None (off)."""
    if isinstance(additional_config, Mapping) and additional_config.get(CONFIG_KEY) is not None:
        return parse_config(additional_config[CONFIG_KEY])
    if not environ.get(ENV_PREFIX + "RULE"):
        return None
    raw = {key: environ[ENV_PREFIX + key.upper()] for key in KEYS if ENV_PREFIX + key.upper() in environ}
    return parse_config(raw, f"{ENV_PREFIX}* environment variables")


def request_overrides(extra_args: Mapping[str, Any] | None) -> tuple[dict[str, Any], str] | None:
    """A request's raw overrides and where they came from, or None if it has none.

    Nested ``extra_args["autojudge"]`` and flat ``extra_args["autojudge_<key>"]`` are merged
    (flat keys win); any other ``extra_args`` key belongs to someone else and is ignored.
    """
    extra_args = extra_args or {}
    nested = extra_args.get(CONFIG_KEY)
    flat = {k[len(FLAT_PREFIX) :]: v for k, v in extra_args.items() if k.startswith(FLAT_PREFIX)}
    if nested is None and not flat:
        return None
    if nested is not None and not isinstance(nested, Mapping):
        raise InputError(
            f"autojudge: SamplingParams.extra_args[{CONFIG_KEY!r}] must be a dict, got {type(nested).__name__}"
        )
    origin = "SamplingParams.extra_args" if flat else f"SamplingParams.extra_args[{CONFIG_KEY!r}]"
    return {**(nested or {}), **flat}, origin


def request_config(engine: PluginConfig, extra_args: Mapping[str, Any] | None) -> PluginConfig:
    """The config one request runs with: the engine's, with the request's overrides applied."""
    found = request_overrides(extra_args)
    if found is None:
        return engine
    raw, origin = found
    values = _parse(raw, REQUEST_KEYS, origin)
    if values.get("rule") == "divergence" and engine.rule != "divergence":
        raise InputError(f"autojudge: {origin} asks for rule 'divergence' on an engine whose rule is not")
    if "rule" in values and values["rule"] != engine.rule and "threshold" not in values:
        values["threshold"] = None  # the engine's threshold belongs to the engine's rule
    return replace(engine, **values)
