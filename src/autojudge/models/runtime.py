"""Building the objects a stage needs from params: task, model pair, generation engine.

The model stack (torch, transformers, an engine) is imported by the function that builds a pair or an
engine: a stage that only needs the task loads none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autojudge.engines.base import GenerationEngine
from autojudge.params import Params
from autojudge.tasks import Task, get_task

if TYPE_CHECKING:
    from autojudge.models.pair import ModelPair
    from autojudge.models.teacher_forced import TokenPredictor


def task_from(params: Params) -> Task:
    return get_task(params.task.name, params.task.data_dir)


def pair_from(params: Params, dtype: str | None = None) -> ModelPair:
    """The pair of params, in ``dtype`` if given (else the pair's own dtype)."""
    from autojudge.models.pair import load_pair

    return load_pair(
        params.pair.name,
        params.pair.draft,
        params.pair.target,
        dtype or params.pair.dtype,
        params.pair.device,
        params.pair.proposer,
    )


def predictor_from(pair: ModelPair, batch_size: int = 16, gumbel_seed: int | None = None) -> TokenPredictor:
    """The proposer's teacher-forced guesses over responses (Algorithm 1's line 6, the grids' draft logits):
    a draft model's argmax after each prefix, or an EAGLE head's first draft there."""
    if pair.proposer == "eagle":
        from autojudge.models.eagle_predictor import EaglePredictor

        return EaglePredictor(pair.draft, pair.target, pair.vocab_size, batch_size)
    from autojudge.models.teacher_forced import DraftPredictor

    return DraftPredictor(pair.draft, pair.vocab_size, pair.pad_token_id, batch_size, gumbel_seed)


def engine_from(params: Params, pair: ModelPair) -> GenerationEngine:
    """The mining engine named in ``params.mining.engine`` for the pair's target."""
    mining = params.mining
    if mining.engine == "hf":
        from autojudge.engines.hf import HFEngine

        return HFEngine(
            pair.target, pair.pad_token_id, pair.eos_token_ids, mining.batch_size, mining.gumbel_seed
        )
    if mining.engine == "vllm":
        from autojudge.engines.vllm_engine import VllmEngine

        return VllmEngine(
            params.pair.target,
            params.pair.dtype,
            pair.eos_token_ids,
            mining.vllm.max_model_len,
            mining.vllm.tensor_parallel_size,
            engine_kwargs=mining.vllm.engine_kwargs,
            gumbel_seed=mining.gumbel_seed,
            in_process=mining.vllm.in_process,
        )
    from autojudge.engines.openai_engine import OpenAIEngine

    return OpenAIEngine(
        mining.openai.base_url, mining.openai.model, pair.eos_token_ids, mining.openai.concurrency
    )
