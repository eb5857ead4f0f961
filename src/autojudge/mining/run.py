"""Mining one shard from params: problems, engine, the proposer's predictor, resumable writer; and the first
problems of any split mined as one such shard (``autojudge ceiling``, the comparison's ceiling)."""

from __future__ import annotations

from pathlib import Path

from autojudge.errors import InputError
from autojudge.mining.search import ImportantTokenSearch, MinedProblem, MiningProblem
from autojudge.mining.shards import ShardSummary, load_shard, mine_shard, shard_of
from autojudge.models.pair import ModelPair, model_signature
from autojudge.models.prompts import encode_prompt
from autojudge.models.runtime import engine_from, pair_from, predictor_from, task_from
from autojudge.models.tokenizer import tokenizer_hash
from autojudge.params import Params


def mining_settings(params: Params, pair: ModelPair) -> dict:
    """Everything that determines the mined labels (the shard fingerprint)."""
    return {
        "task": params.task.name,
        "split": params.mining.split,
        "pair": params.pair.name,
        "proposer": params.pair.proposer,
        "target": model_signature(params.pair.target),
        "draft": model_signature(params.pair.draft),
        "tokenizer": tokenizer_hash(pair.tokenizer),
        "dtype": params.pair.dtype,
        "chat_template": params.pair.chat_template,
        "engine": params.mining.engine,
        "max_response_tokens": params.mining.max_response_tokens,
        "gumbel_seed": params.mining.gumbel_seed,
    } | ({"skipped_problems": params.mining.skip} if params.mining.skip else {})


def mining_problems(params: Params, pair: ModelPair, problems: int | None = None) -> list[MiningProblem]:
    """The first ``problems`` (default: mining.problems) problems of the mining split after its first
    ``mining.skip``, prompts encoded."""
    task, skip = task_from(params), params.mining.skip
    count = problems or params.mining.problems
    examples = task.load_split(params.mining.split, None if count is None else skip + count)[skip:]
    if not examples:
        raise InputError(f"mining.skip {skip} passes over every problem of split {params.mining.split!r}")
    return [
        MiningProblem(e.id, encode_prompt(pair.tokenizer, task.build_prompt(e), params.pair.chat_template), e)
        for e in examples
    ]


def mine_from_params(params: Params, shard: int, directory: Path) -> ShardSummary:
    """Mine shard ``shard`` of the mining split into ``directory`` (resuming what is there)."""
    pair = pair_from(params)
    problems = shard_of(mining_problems(params, pair), shard, len(params.mining.shards))
    engine = engine_from(params, pair)
    try:
        search = ImportantTokenSearch(
            task_from(params),
            pair.tokenizer,
            engine,
            predictor_from(pair, params.mining.batch_size, params.mining.gumbel_seed),
            params.mining.max_response_tokens,
            pair.eos_token_ids,
            params.mining.pool_size,
        )
        settings = mining_settings(params, pair)
        return mine_shard(
            search, problems, directory, {**settings, "shard": shard, "of": len(params.mining.shards)}
        )
    finally:
        engine.close()


def mine_first(
    params: Params, problems: int, directory: Path, split: str | None = None
) -> list[MinedProblem]:
    """Algorithm 1 on the first ``problems`` problems of ``split`` (from its start; default: mining.split
    after mining.skip) as one shard in ``directory``, resuming what is there; every problem it holds."""
    update: dict = {"problems": problems, "shards": [0]}
    if split is not None:
        update |= {"split": split, "skip": 0}
    mining = params.mining.model_copy(update=update)
    mine_from_params(params.model_copy(update={"mining": mining}), 0, directory)
    return load_shard(directory)
