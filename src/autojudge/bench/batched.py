"""Wall-time benchmark of the batched reference engine against the one-sequence engine on a sweep.

A sweep (the stages evaluate, crossdomain and compare) decodes every problem of a split with many
settings. Both engines decode the same (setting, problem) requests in one process, interleaved within
each repeat; the report gives medians, their ratio and whether every output is token-identical.
"""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime

from autojudge.bench.reference import machine_of
from autojudge.decoding.batched import BatchedDecoder, Request
from autojudge.decoding.factory import speculative
from autojudge.decoding.generation import Generation
from autojudge.models.pair import ModelPair


def _one_at_a_time(
    pair: ModelPair, requests: list[Request], window: int, max_new_tokens: int
) -> list[Generation]:
    return [speculative(pair, r.rule, window, max_new_tokens).generate(r.prompt) for r in requests]


def benchmark_batched_engine(
    pair: ModelPair,
    requests: list[Request],
    window: int,
    max_new_tokens: int,
    batch_size: int,
    repeats: int,
) -> dict:
    """Median seconds of each engine over ``repeats`` interleaved runs of the same requests."""
    batched = BatchedDecoder(
        pair.target, pair.draft, pair.vocab_size, pair.eos_token_ids, window, max_new_tokens, batch_size
    )
    engines = {
        "one_sequence": lambda: _one_at_a_time(pair, requests, window, max_new_tokens),
        "batched": lambda: batched.generate(requests, "batched"),
    }
    seconds: dict[str, list[float]] = {name: [] for name in engines}
    outputs: dict[str, list[Generation]] = {}
    for _ in range(repeats):
        for name, run in engines.items():
            started = time.perf_counter()
            outputs[name] = run()
            seconds[name].append(time.perf_counter() - started)
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    tokens = sum(g.stats.tokens for g in outputs["batched"])
    identical = sum(
        a.tokens == b.tokens and a.stats.target_passes == b.stats.target_passes
        for a, b in zip(outputs["one_sequence"], outputs["batched"], strict=True)
    )
    return {
        "benchmark": "batched reference engine vs the one-sequence engine, the same sweep requests",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": machine_of(pair),
        "pair": pair.name,
        "requests": len(requests),
        "window": window,
        "max_new_tokens": max_new_tokens,
        "batch_size": batch_size,
        "repeats": repeats,
        "tokens": tokens,
        "engines": {
            name: {
                "median_seconds": round(medians[name], 3),
                "seconds_per_repeat": [round(s, 3) for s in seconds[name]],
                "tokens_per_second": round(tokens / medians[name], 1),
            }
            for name in engines
        },
        "speedup": round(medians["one_sequence"] / medians["batched"], 2),
        "identical_outputs_and_passes": f"{identical}/{len(requests)}",
    }
