"""vLLM plugin: lossy "judge" verification for greedy draft-model speculative decoding (vLLM 0.32).

Declared as a general plugin, so vLLM calls :func:`register` in every process it starts::

    [project.entry-points."vllm.general_plugins"]
    autojudge = "autojudge.vllm_plugin:register"

It changes one thing: where vLLM would reject draft token i (draft != target argmax), the
configured rule may accept it and verification goes on with draft token i+1. The rules are the
reference engine's (``autojudge.decoding.rules``), applied to all draft rows of a batch at once.
Off unless an engine enables it::

    LLM(model=target, speculative_config={"method": "draft_model", "model": draft,
                                          "num_speculative_tokens": 8},
        additional_config={"autojudge": {"rule": "judge", "judge_head": "models:/autojudge-arith-toy@production"}})

    vllm serve TARGET --speculative-config '{"method": "draft_model", "model": "DRAFT", "num_speculative_tokens": 8}' \
        --additional-config '{"autojudge": {"rule": "topk", "top_k": 4}}'

Keys (or environment variables ``AUTOJUDGE_VLLM_<KEY>``): ``rule`` = ``exact`` (vLLM unchanged)
| ``topk`` (``top_k``) | ``judge`` (``judge_head``: a head file/directory or ``models:/name@alias``,
resolved with ``MLFLOW_TRACKING_URI`` or the project's ``mlflow/`` store; optional ``threshold``,
default the head's) | ``divergence`` (``divergence`` = kl/js/tv, ``threshold``). A request may
override ``rule``/``threshold``/``top_k``/``divergence`` with
``SamplingParams(extra_args={"autojudge": {...}})``. The judge scores the target's last-layer
hidden state at the draft token's position (from the verification pass); heads on draft features
are refused, as is a head whose hidden sizes or tokenizer do not match the engine's models.
Greedy requests only (temperature 0); sampled requests keep vLLM's decision.

Needs vLLM's V1 model runner: the CPU build always uses it; on CUDA set
``VLLM_USE_V2_MODEL_RUNNER=0`` (``engine.speculative_llm`` does), otherwise the engine refuses to
start. The decision path is plain batched torch with no host synchronisation (``verify.py``).
"""

from __future__ import annotations

from autojudge.vllm_plugin.config import PluginConfig, resolve_config

__all__ = ["PluginConfig", "register", "resolve_config"]


def register() -> None:
    """Entry point of ``vllm.general_plugins``: install the (dormant) patches in this process."""
    from autojudge.vllm_plugin.patches import install

    install()
