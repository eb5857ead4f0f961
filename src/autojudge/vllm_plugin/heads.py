"""Judge heads for the plugin: loaded through the project's loaders and checked against the engine's models."""

from __future__ import annotations

from pathlib import Path

from autojudge.errors import ModelPairError
from autojudge.heads.artifact import JudgeHead
from autojudge.models.pair import load_tokenizer, tokenizer_hash
from autojudge.tracking.heads import resolve_head


def load_checked_head(
    location: str, target: str | Path, draft: str | Path, target_hidden: int, draft_hidden: int
) -> JudgeHead:
    """The head at ``location`` (file, directory or ``models:/name@alias``), refused unless it fits the models.

    The plugin scores heads on the target's hidden states only (vLLM's drafter never encodes
    its last draft token), so a head on draft features is refused too.
    """
    head = resolve_head(location)
    where = (
        f"autojudge: judge head {location} (pair {head.pair!r}) does not fit target {target}, draft {draft}"
    )
    if head.features.source != "target":
        raise ModelPairError(
            f"{where}: it reads {head.features.source!r} hidden states, the vLLM plugin only the "
            "target's (train it with features.source: target)"
        )
    try:
        head.check_models(
            f"{target} + {draft}",
            tokenizer_hash(load_tokenizer(Path(target), "target")),
            target_hidden,
            draft_hidden,
        )
    except ModelPairError as error:
        raise ModelPairError(f"{where}: {error}") from None
    return head


def hidden_size(model: str | Path) -> int:
    """The hidden size in a model directory's config."""
    from transformers import AutoConfig

    return int(AutoConfig.from_pretrained(str(model)).hidden_size)
