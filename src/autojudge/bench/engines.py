"""The two evaluation engines on one sweep: wall time and how often they emit the same tokens.

The same settings (a comparison grid, exact SD, target greedy) decode the same problems on the batched
reference engine and on vLLM with the plugin (``decoding.engine``). Exact SD must be token-identical
on both (both are lossless greedy). Both emit the first response token from the prompt's pass alone
(vLLM's prefill) and verify the same windows from there on, so a lossy rule differs only where float32
kernels that differ by ~1e-6 flip a decision that lies that close to its threshold; a response differs
from that token on.
"""

from __future__ import annotations

import time
from pathlib import Path

from autojudge.decoding.generation import Generation
from autojudge.evaluation.setting import Setting
from autojudge.evaluation.sweep import decode_settings
from autojudge.models.runtime import pair_from, task_from
from autojudge.params import Params

REASONS = (
    "Both engines emit the first token from the prompt's pass alone and verify the same windows after it; "
    "float32 kernels differ by ~1e-6 (batched against one-row products, vLLM's CPU attention), which flips "
    "a decision that lies that close to a threshold, and a response differs from that token on. Exact SD "
    "is lossless on both, so it must be identical."
)


def _mat(generations: list[Generation]) -> float:
    return sum(g.stats.tokens for g in generations) / max(1, sum(g.stats.target_passes for g in generations))


def compare_engines(
    params: Params, settings: list[Setting], split: str, limit: int | None, head_files: dict[str, Path]
) -> dict:
    """Decode ``settings`` on both engines (reference first), time each and compare their tokens."""
    pair, task = pair_from(params), task_from(params)
    examples = task.load_split(split, limit)
    decoded, seconds = {}, {}
    for engine in ("reference", "vllm"):
        chosen = params.model_copy(update={"decoding": params.decoding.model_copy(update={"engine": engine})})
        start = time.perf_counter()
        decoded[engine] = decode_settings(chosen, pair, settings, examples, head_files)
        seconds[engine] = round(time.perf_counter() - start, 2)
    rows = []
    n = len(examples)
    for index, setting in enumerate(settings):
        ours, theirs = (decoded[e][index * n : (index + 1) * n] for e in ("reference", "vllm"))
        same = sum(a.tokens == b.tokens for a, b in zip(ours, theirs, strict=True))
        rows.append(
            {
                "setting": setting.name,
                "method": setting.method,
                "identical_problems": same,
                "identical_share": round(same / n, 4),
                "reference_mat": round(_mat(ours), 4),
                "vllm_mat": round(_mat(theirs), 4),
            }
        )
    exact = [row for row in rows if row["method"] in ("exact", "target")]
    return {
        "pair": params.pair.name,
        "task": params.task.name,
        "split": split,
        "problems": n,
        "window": params.compare.window,
        "settings": rows,
        "seconds": seconds,
        "faster": min(seconds, key=seconds.get),
        "speedup_of_faster": round(max(seconds.values()) / max(min(seconds.values()), 1e-9), 2),
        "lossless_identical": all(row["identical_problems"] == n for row in exact),
        "why_lossy_rules_may_differ": REASONS,
    }
