"""Mining throughput benchmark: problems per minute with the vLLM engine against HF, same problems, same run."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

from autojudge.engines.base import GenerationEngine
from autojudge.mining.search import ImportantTokenSearch, MinedProblem, MiningProblem
from autojudge.models.pair import ModelPair
from autojudge.models.runtime import predictor_from
from autojudge.tasks.base import Task


def _mine(
    engine: GenerationEngine,
    pair: ModelPair,
    task: Task,
    problems: list[MiningProblem],
    pool: int,
    batch: int,
    max_tokens: int,
) -> tuple[dict[str, MinedProblem], float]:
    draft = predictor_from(pair, batch)
    search = ImportantTokenSearch(task, pair.tokenizer, engine, draft, max_tokens, pair.eos_token_ids, pool)
    started = time.perf_counter()
    results = {r.id: r for r in search.run(problems)}
    return results, time.perf_counter() - started


def benchmark_mining(
    pair: ModelPair,
    task: Task,
    problems: list[MiningProblem],
    engines: dict[str, callable],
    pool: int,
    batch: int,
    max_tokens: int,
) -> dict:
    """Run Algorithm 1 on the same problems with each engine (built by ``engines[name]()``), in turn."""
    figures, labels = {}, {}
    load_before = os.getloadavg()[0]
    for name, build in engines.items():
        started = time.perf_counter()
        engine = build()
        startup = time.perf_counter() - started
        try:
            results, seconds = _mine(engine, pair, task, problems, pool, batch, max_tokens)
        finally:
            engine.close()
        labels[name] = {i: [(m.position, m.important) for m in r.mismatches] for i, r in results.items()}
        figures[name] = {
            "engine_start_seconds": round(startup, 2),
            "mining_seconds": round(seconds, 2),
            "problems_per_minute": round(60 * len(problems) / seconds, 2),
            "mismatches": sum(len(r.mismatches) for r in results.values()),
            "generate_calls": sum(r.generate_calls for r in results.values()),
        }
    names = list(engines)
    return {
        "benchmark": "Algorithm 1 mining throughput (engine start excluded)",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "pair": pair.name,
        "task": task.name,
        "problems": len(problems),
        "pool_size": pool,
        "hf_batch_size": batch,
        "engines": figures,
        "ratio": {
            f"{a}_over_{b}": round(figures[a]["problems_per_minute"] / figures[b]["problems_per_minute"], 3)
            for a in names
            for b in names
            if a != b
        },
        "same_labels": all(labels[n] == labels[names[0]] for n in names),
        "machine": {"cpus": os.cpu_count(), "load_average_1m": [load_before, os.getloadavg()[0]]},
    }
