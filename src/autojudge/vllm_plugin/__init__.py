"""vLLM plugin: lossy "judge" verification for draft-model speculative decoding (vLLM 0.32).

Declared as a general plugin, so vLLM calls :func:`register` in every process it starts::

    [project.entry-points."vllm.general_plugins"]
    autojudge = "autojudge.vllm_plugin:register"

It changes one thing: where vLLM would reject draft token i (greedy: draft != target argmax; sampled:
the standard test u <= p(x) fails), the configured rule may accept it (never a token with p(x) = 0) and
verification goes on with draft token i+1. The rules are the
reference engine's (``autojudge.rules.acceptance``), applied to all draft rows of a batch at once.
Off unless an engine enables it::

    LLM(model=target, speculative_config={"method": "draft_model", "model": draft,
                                          "num_speculative_tokens": 8},
        additional_config={"autojudge": {"rule": "judge", "judge_head": "models:/autojudge-arith-toy@production"}})

    vllm serve TARGET --speculative-config '{"method": "draft_model", "model": "DRAFT", "num_speculative_tokens": 8}' \
        --additional-config '{"autojudge": {"rule": "topk", "top_k": 4}}'

Keys (or environment variables ``AUTOJUDGE_VLLM_<KEY>``) are the rule registry's
(``autojudge.rules.config``): ``rule`` = ``exact`` (vLLM unchanged) | ``topk`` (``top_k``) | ``judge`` or
``selfjudge`` (``judge_head``: a head file/directory or ``models:/name@alias``, pinned once by the process
that builds the engine; optional ``threshold``, default the head's) | ``fsd-js``/``fsd-kl``/``fsd-tv`` and
their ``-published`` variants, ``kl-mask`` (``confidence``), ``target-entropy``, ``draft-entropy``
(``threshold``) | ``fly`` (``threshold``, ``fly_window_size``, ``fly_entropy_top_k``). A request may
override the rule and its keys with ``SamplingParams(extra_args=...)``, nested under ``"autojudge"`` or
flat as ``autojudge_<key>`` (the OpenAI server's ``vllm_xargs``).

How it hooks vLLM 0.32 (details in ``patches.py``, ``runner.py``, ``worker.py``): the frontend's
``EngineArgs.create_engine_config`` is wrapped so that an enabled engine is checked (``compat``),
its head pinned (``pinning``) and its ``worker_cls`` set to ``JudgeWorker``, whose V1 model runner
subclass decides verification. Needs vLLM's V1 model runner: the CPU build always uses it, and on
CUDA (where vLLM 0.32 would pick Model Runner V2) the frontend sets ``VLLM_USE_V2_MODEL_RUNNER=0`` for an
enabled engine before vLLM builds its config; a user who sets ``VLLM_USE_V2_MODEL_RUNNER=1`` gets a
refusal at start.

``register()`` imports only the standard library and this package's light modules: with the
plugin installed and no engine enabling it, vLLM's own config is untouched.

Imports tracking (heads by URI), rules, heads, models and lower layers; evaluation and bench import it.
"""

from __future__ import annotations

__all__ = ["register"]


def register() -> None:
    """Entry point of ``vllm.general_plugins``: hook the frontend's engine config (dormant until enabled)."""
    from autojudge.vllm_plugin.hooks import when_imported

    when_imported("vllm.engine.arg_utils", "autojudge.vllm_plugin.patches:patch_engine_args")
