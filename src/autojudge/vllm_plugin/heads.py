"""Judge heads for the plugin: loaded through the project's loaders and checked against the engine's models."""

from __future__ import annotations

import logging
from pathlib import Path

from autojudge.errors import ModelPairError
from autojudge.heads.artifact import JudgeHead
from autojudge.models.tokenizer import load_tokenizer, tokenizer_hash
from autojudge.tracking.heads import resolve_head

logger = logging.getLogger("vllm.autojudge")


def load_checked_head(location: str, target: str | Path, target_hidden: int, proposer: str) -> JudgeHead:
    """The head at ``location`` (file, directory or ``models:/name@alias``), refused unless it fits the target.

    The plugin scores heads on what the target computed in the verification step (its states reading and
    predicting each draft token, its logits, the token ids: every group of ``autojudge.features.spec``); no
    proposer encodes its last draft token for the target, so a head on draft states is refused, and any
    other fits every proposer of this target: draft_model, eagle or ngram. A head mined with another proposer than
    ``proposer`` (vLLM's ``speculative_config.method``) is served with a warning: its labels describe
    that proposer's mismatches.
    """
    head = resolve_head(location)
    where = f"autojudge: judge head {location} (pair {head.pair!r}) does not fit target {target}"
    if "draft" in head.features.reads:
        raise ModelPairError(
            f"{where}: it reads {head.features.source!r} hidden states, the vLLM plugin only the "
            "target's (train it with features.source: target)"
        )
    try:
        head.check_models(
            str(target), tokenizer_hash(load_tokenizer(Path(target), "target")), target_hidden, None
        )
    except ModelPairError as error:
        raise ModelPairError(f"{where}: {error}") from None
    if head.proposer != proposer:
        logger.warning(
            "autojudge: judge head %s was mined with the %s proposer, this engine drafts with %s: it judges "
            "another proposer's mismatches than those it learned from",
            location,
            head.proposer,
            proposer,
        )
    return head


def hidden_size(model: str | Path) -> int:
    """The hidden size in a model directory's config."""
    from transformers import AutoConfig

    return int(AutoConfig.from_pretrained(str(model)).hidden_size)
