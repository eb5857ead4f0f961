"""Per-engine (and per-request) configuration of the autojudge vLLM plugin.

The plugin is off unless an engine asks for it, in one of two ways (the first wins):

* ``LLM(..., additional_config={"autojudge": {"rule": "topk", "top_k": 8}})`` — per engine.
  ``additional_config`` is a field of ``VllmConfig``, which every worker process receives, so
  this reaches the model runner wherever it runs. (``speculative_config`` cannot carry it:
  ``SpeculativeConfig`` is a pydantic dataclass with ``extra="forbid"``.) With ``vllm serve``:
  ``--additional-config '{"autojudge": {...}}'``.
* environment variables ``AUTOJUDGE_VLLM_<KEY>`` (``AUTOJUDGE_VLLM_RULE``, ``AUTOJUDGE_VLLM_THRESHOLD``,
  ``AUTOJUDGE_VLLM_JUDGE_HEAD``, ...) — process-wide; spawned engine/worker processes inherit the
  parent's environment.

The rules, their keys and ranges are the registry's (``autojudge.rules.config``): the names and keys
of ``params.yaml`` and ``autojudge eval``. On an engine that enabled the plugin, one request may
override ``rule``, ``threshold``, ``top_k``, ``confidence`` and FLy's keys through
``SamplingParams(extra_args=...)``, either nested (``{"autojudge": {"threshold": 0.5}}``) or flat
(``{"autojudge_threshold": 0.5}``: the form the OpenAI server's ``vllm_xargs`` can carry, since it
passes no nested dicts). The judge head stays the engine's (a head rule needs an engine with one), and
a rule that reads the drafter's logits (FSD, kl-mask, draft entropy) needs an engine whose own rule
does (only then does the drafter keep them).

This module imports nothing heavy: vLLM's frontend imports it when it loads the plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from autojudge.errors import InputError
from autojudge.rules.config import RULE_FIELDS, RuleConfig, fly_window, parse_values, rule_config

CONFIG_KEY = "autojudge"
ENV_PREFIX = "AUTOJUDGE_VLLM_"
FLAT_PREFIX = CONFIG_KEY + "_"  # flat request keys: autojudge_rule, autojudge_threshold, ...
# judge_head_sha256 pins the head file: the frontend writes it when it resolves judge_head.
KEYS = (*RULE_FIELDS, "judge_head", "judge_head_sha256")
REQUEST_KEYS = RULE_FIELDS


@dataclass(frozen=True)
class PluginConfig(RuleConfig):
    """Which acceptance rule verification uses, with its keys, and the engine's judge head."""

    judge_head: str | None = None  # a head file/directory or an MLflow URI ``models:/name@alias``
    judge_head_sha256: str | None = None  # the pinned head file's content hash (set by the frontend)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.needs_head and not self.judge_head:
            raise InputError(
                f"autojudge: rule {self.rule!r} needs judge_head (a head file or models:/name@alias)"
            )

    def describe(self) -> str:
        if self.needs_head:
            return f"{super().describe()} head={self.judge_head}"
        return super().describe()


def parse_config(raw: Mapping[str, Any], origin: str = f"additional_config[{CONFIG_KEY!r}]") -> PluginConfig:
    """An engine's config from a mapping with the keys in ``KEYS``."""
    return rule_config(raw, origin, PluginConfig)


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


def request_config(
    engine: PluginConfig, extra_args: Mapping[str, Any] | None, num_speculative_tokens: int | None = None
) -> PluginConfig:
    """The config one request runs with: the engine's, with the request's overrides applied (FLy's window
    checked against ``num_speculative_tokens`` when given)."""
    found = request_overrides(extra_args)
    if found is None:
        return engine
    raw, origin = found
    values = parse_values(raw, REQUEST_KEYS, origin)
    if "rule" in values and values["rule"] != engine.rule and "threshold" not in values:
        values["threshold"] = None  # the engine's threshold belongs to the engine's rule
    config = replace(engine, **values)
    if config.needs_draft_logits and not engine.needs_draft_logits:
        raise InputError(
            f"autojudge: {origin} asks for rule {config.rule!r}, which reads the drafter's logits, on an engine "
            f"whose rule ({engine.rule!r}) does not keep them"
        )
    if config.rule == "fly" and num_speculative_tokens is not None:
        fly_window(config.fly_window_size, num_speculative_tokens)
    return config
