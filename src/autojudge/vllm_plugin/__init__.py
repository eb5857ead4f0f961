"""vLLM plugin: lossy "judge" verification for greedy draft-model speculative decoding.

Declared as a general plugin, so vLLM calls :func:`register` in every process it starts::

    [project.entry-points."vllm.general_plugins"]
    autojudge = "autojudge.vllm_plugin:register"

It changes one thing: where vLLM would reject draft token i (draft != target argmax), the
configured rule may accept it and verification goes on with draft token i+1. Off unless an
engine enables it, e.g.::

    LLM(model=target, speculative_config={"method": "draft_model", ...},
        additional_config={"autojudge": {"rule": "judge", "judge_head": "head.json"}})

Rules: ``exact`` (vLLM unchanged), ``topk`` (``top_k``), ``judge`` (``judge_head``, optional
``threshold``), ``divergence`` (``divergence`` in kl/js/tv, ``threshold``). See ``config.py``
for the environment-variable form.
"""

from __future__ import annotations

from autojudge.vllm_plugin.config import JudgeHead, PluginConfig, load_judge_head, resolve_config

__all__ = ["JudgeHead", "PluginConfig", "load_judge_head", "register", "resolve_config"]


def register() -> None:
    """Entry point of ``vllm.general_plugins``: install the (dormant) patches in this process."""
    from autojudge.vllm_plugin.patches import install

    install()
