"""Gumbel-max mining on vLLM: the transformers engine's per-prefix noise, as a vLLM logits processor.

A request whose ``extra_args`` carry ``gumbel_max_seed`` gets ``log_softmax(logits) + g`` with
``g = gumbel_noise(seed, prompt + output so far)`` before vLLM's greedy sampler takes the argmax, so
its continuation is a Gumbel-max sample that depends only on (seed, prefix), exactly as with
``engines.hf``: both engines mine the same labels from the same seed. Requests without the key are
untouched. Load it with ``LLM(..., logits_processors=[PrefixGumbel])``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from vllm import SamplingParams
from vllm.v1.sample.logits_processor import AdapterLogitsProcessor

from autojudge.engines.gumbel import gumbel_noise

SEED_KEY = "gumbel_max_seed"  # not "autojudge_*": those keys are the plugin's per-request rules


class PrefixGumbel(AdapterLogitsProcessor):
    """Per-prefix Gumbel noise on the log-probabilities of requests that ask for it."""

    def is_argmax_invariant(self) -> bool:
        return False

    def new_req_logits_processor(
        self, params: SamplingParams
    ) -> Callable[[list[int], list[int], torch.Tensor], torch.Tensor] | None:
        seed = (params.extra_args or {}).get(SEED_KEY)
        if seed is None:
            return None

        def add_noise(prompt_ids: list[int], output_ids: list[int], logits: torch.Tensor) -> torch.Tensor:
            noise = gumbel_noise(int(seed), [*prompt_ids, *output_ids], logits.shape[-1])
            return torch.log_softmax(logits.float(), dim=-1) + noise.to(logits.device)

        return add_noise
