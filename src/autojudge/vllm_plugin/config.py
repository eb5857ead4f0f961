"""Per-engine configuration of the autojudge vLLM plugin and judge-head loading.

The plugin is off unless an engine asks for it, in one of two ways (the first wins):

* ``LLM(..., additional_config={"autojudge": {"rule": "topk", "top_k": 8}})`` — per engine.
  ``additional_config`` is a field of ``VllmConfig``, which every worker process receives, so
  this reaches the model runner wherever it runs. (``speculative_config`` cannot carry it:
  ``SpeculativeConfig`` is a pydantic dataclass with ``extra="forbid"``.)
* environment variables ``AUTOJUDGE_VLLM_RULE``, ``AUTOJUDGE_VLLM_TOP_K``,
  ``AUTOJUDGE_VLLM_JUDGE_HEAD``, ``AUTOJUDGE_VLLM_THRESHOLD``, ``AUTOJUDGE_VLLM_DIVERGENCE`` —
  process-wide; spawned engine/worker processes inherit the parent's environment.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import torch

from autojudge.errors import InputError

Rule = Literal["exact", "topk", "judge", "divergence"]
Divergence = Literal["kl", "js", "tv"]

CONFIG_KEY = "autojudge"
ENV_PREFIX = "AUTOJUDGE_VLLM_"
_KEYS = ("rule", "top_k", "judge_head", "threshold", "divergence")


@dataclass(frozen=True)
class PluginConfig:
    """Which acceptance rule verification uses, with its parameters."""

    rule: Rule
    top_k: int | None = None
    judge_head: Path | None = None
    threshold: float | None = None  # judge: overrides the head's own; divergence: required
    divergence: Divergence = "kl"

    def __post_init__(self) -> None:
        if self.rule not in get_args(Rule):
            raise InputError(f"autojudge: unknown rule {self.rule!r}; expected one of {get_args(Rule)}")
        if self.rule == "topk" and (self.top_k is None or self.top_k < 1):
            raise InputError(f"autojudge: rule 'topk' needs top_k >= 1, got {self.top_k}")
        if self.rule == "judge" and self.judge_head is None:
            raise InputError("autojudge: rule 'judge' needs judge_head (a .pt or .json file)")
        if self.rule == "divergence":
            if self.divergence not in get_args(Divergence):
                raise InputError(
                    f"autojudge: unknown divergence {self.divergence!r}; expected one of "
                    f"{get_args(Divergence)}"
                )
            if self.threshold is None:
                raise InputError("autojudge: rule 'divergence' needs a threshold")
        if self.threshold is not None and not math.isfinite(self.threshold):
            raise InputError(f"autojudge: threshold must be finite, got {self.threshold}")

    def describe(self) -> str:
        if self.rule == "topk":
            return f"topk(k={self.top_k})"
        if self.rule == "judge":
            return f"judge(head={self.judge_head}, threshold={self.threshold})"
        if self.rule == "divergence":
            return f"divergence({self.divergence} < {self.threshold})"
        return self.rule


def _from_mapping(raw: Mapping[str, Any], origin: str) -> PluginConfig:
    unknown = set(raw) - set(_KEYS)
    if unknown:
        raise InputError(f"autojudge: unknown keys {sorted(unknown)} in {origin}; allowed: {list(_KEYS)}")
    if "rule" not in raw:
        raise InputError(f"autojudge: {origin} must name a 'rule'")
    try:
        return PluginConfig(
            rule=str(raw["rule"]),  # type: ignore[arg-type]  # validated in __post_init__
            top_k=None if raw.get("top_k") in (None, "") else int(raw["top_k"]),
            judge_head=None if raw.get("judge_head") in (None, "") else Path(str(raw["judge_head"])),
            threshold=None if raw.get("threshold") in (None, "") else float(raw["threshold"]),
            divergence=str(raw.get("divergence") or "kl"),  # type: ignore[arg-type]
        )
    except (TypeError, ValueError) as exc:
        raise InputError(f"autojudge: bad value in {origin}: {exc}") from exc


def resolve_config(additional_config: object, environ: Mapping[str, str]) -> PluginConfig | None:
    """The engine's plugin config: ``additional_config["autojudge"]``, else env vars, else None (off)."""
    if isinstance(additional_config, Mapping) and additional_config.get(CONFIG_KEY) is not None:
        raw = additional_config[CONFIG_KEY]
        if not isinstance(raw, Mapping):
            raise InputError(f"autojudge: additional_config[{CONFIG_KEY!r}] must be a dict, got {type(raw)}")
        return _from_mapping(raw, f"additional_config[{CONFIG_KEY!r}]")
    if not environ.get(ENV_PREFIX + "RULE"):
        return None
    raw_env = {key: environ[ENV_PREFIX + key.upper()] for key in _KEYS if ENV_PREFIX + key.upper() in environ}
    return _from_mapping(raw_env, f"{ENV_PREFIX}* environment variables")


@dataclass(frozen=True)
class JudgeHead:
    """Logistic-regression judge: p = sigmoid(weight · h + bias); a mismatch is accepted if p < threshold."""

    weight: torch.Tensor  # [hidden_size] float32
    bias: float
    threshold: float
    hidden_size: int


def load_judge_head(path: Path) -> JudgeHead:
    """Read a head from ``.json`` or ``.pt`` holding ``weight``, ``bias``, ``threshold``, ``hidden_size``."""
    if not path.is_file():
        raise InputError(f"autojudge: judge head file not found: {path}")
    if path.suffix == ".json":
        raw: Any = json.loads(path.read_text())
    elif path.suffix in (".pt", ".pth"):
        raw = torch.load(path, map_location="cpu", weights_only=True)
    else:
        raise InputError(f"autojudge: judge head must be .json or .pt, got {path}")
    if not isinstance(raw, Mapping):
        raise InputError(f"autojudge: judge head {path} must hold a dict, got {type(raw)}")
    missing = {"weight", "bias", "threshold", "hidden_size"} - set(raw)
    if missing:
        raise InputError(f"autojudge: judge head {path} lacks {sorted(missing)}")
    weight = torch.as_tensor(raw["weight"], dtype=torch.float32).flatten()
    hidden_size = int(raw["hidden_size"])
    if weight.numel() != hidden_size:
        raise InputError(
            f"autojudge: judge head {path} has {weight.numel()} weights but hidden_size={hidden_size}"
        )
    return JudgeHead(
        weight=weight, bias=float(raw["bias"]), threshold=float(raw["threshold"]), hidden_size=hidden_size
    )
