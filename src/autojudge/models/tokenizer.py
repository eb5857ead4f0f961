"""The tokenizer a draft/target pair shares: loading it alone, what must match between the two, its hash.

Transformers (and with it torch) is imported when a tokenizer is loaded, not with this module: stages that
only bind an artifact to a vocabulary (train) or read one (the vLLM plugin's checks) name these without
the model stack.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from autojudge.errors import InputError, ModelPairError

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

# tokens that end a turn in the chat templates of the supported families (ChatML, Llama 3, Llama 2)
END_OF_TURN_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "</s>")


def model_dir(path: Path, role: str) -> Path:
    """``path`` as a model (a tokenizer is saved beside it): it exists, and a directory holds config.json."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{role} model not found: {path}")
    if path.is_dir() and not (path / "config.json").is_file():
        raise InputError(f"{role} model directory has no config.json: {path}")
    return path


def load_tokenizer(path: Path, role: str = "model") -> PreTrainedTokenizerBase:
    """The tokenizer saved beside a model."""
    from transformers import AutoTokenizer

    path = model_dir(path, role)
    try:
        return AutoTokenizer.from_pretrained(str(path))
    except (OSError, ValueError) as error:
        raise InputError(f"cannot load the {role} tokenizer from {path}: {error}") from None


def eos_token_ids(tokenizer: PreTrainedTokenizerBase, generation_eos: int | list[int] | None) -> set[int]:
    """Every id that ends a response: the tokenizer's EOS, the generation config's, each end-of-turn token."""
    ids = {tokenizer.eos_token_id}
    ids.update([generation_eos] if isinstance(generation_eos, int) else generation_eos or [])
    vocabulary = tokenizer.get_vocab()
    ids.update(vocabulary[token] for token in END_OF_TURN_TOKENS if token in vocabulary)
    return {i for i in ids if i is not None}


def tokenizer_fingerprint(tokenizer: PreTrainedTokenizerBase) -> dict:
    """What must be identical for two models to share drafts: vocabulary and special tokens."""
    return {
        "vocab": tokenizer.get_vocab(),
        "special": {
            "bos": tokenizer.bos_token_id,
            "eos": tokenizer.eos_token_id,
            "pad": tokenizer.pad_token_id,
            "all": sorted(tokenizer.all_special_tokens),
        },
    }


def check_same_tokenizer(
    draft: PreTrainedTokenizerBase, target: PreTrainedTokenizerBase, draft_path: Path, target_path: Path
) -> None:
    """Raise `ModelPairError` naming both models unless their tokenizers are identical."""
    draft_print, target_print = tokenizer_fingerprint(draft), tokenizer_fingerprint(target)
    if draft_print["vocab"] != target_print["vocab"]:
        only_draft = len(set(draft_print["vocab"].items()) - set(target_print["vocab"].items()))
        raise ModelPairError(
            f"tokenizers differ: draft {draft_path} and target {target_path} have different vocabularies "
            f"({len(draft_print['vocab'])} vs {len(target_print['vocab'])} tokens, "
            f"{only_draft} draft entries not in the target)"
        )
    if draft_print["special"] != target_print["special"]:
        raise ModelPairError(
            f"tokenizers differ: draft {draft_path} and target {target_path} have different special tokens "
            f"({draft_print['special']} vs {target_print['special']})"
        )


def tokenizer_hash(tokenizer: PreTrainedTokenizerBase) -> str:
    """A short stable hash of the tokenizer's fingerprint, to tie artifacts to a vocabulary."""
    payload = json.dumps(tokenizer_fingerprint(tokenizer), sort_keys=True).encode()
    return hashlib.sha256(payload).hexdigest()[:16]
