"""Loading a draft/target pair of causal LMs that share one tokenizer, with validation; saving a checkpoint."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from autojudge.errors import InputError, ModelPairError
from autojudge.io import atomic_path

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


def resolve_dtype(name: str) -> torch.dtype:
    if name not in DTYPES:
        raise InputError(f"unknown dtype {name!r}; expected one of {', '.join(DTYPES)}")
    return DTYPES[name]


def _require_model_dir(path: Path, role: str) -> Path:
    path = Path(path)
    if not path.exists():
        raise InputError(f"{role} model not found: {path}")
    if path.is_dir() and not (path / "config.json").is_file():
        raise InputError(f"{role} model directory has no config.json: {path}")
    return path


def load_tokenizer(path: Path, role: str = "model") -> PreTrainedTokenizerBase:
    """The tokenizer saved beside a model."""
    path = _require_model_dir(path, role)
    try:
        return AutoTokenizer.from_pretrained(str(path))
    except (OSError, ValueError) as error:
        raise InputError(f"cannot load the {role} tokenizer from {path}: {error}") from None


def load_causal_lm(
    path: Path, dtype: torch.dtype, device: str = "cpu", role: str = "model"
) -> PreTrainedModel:
    """A causal LM in eval mode with the given dtype."""
    path = _require_model_dir(path, role)
    try:
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype)
    except (OSError, ValueError) as error:
        raise InputError(f"cannot load the {role} model from {path}: {error}") from None
    return model.to(device).eval()


def save_checkpoint(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, out: Path) -> None:
    """Model (with its generation config) and tokenizer at ``out``, written beside it and renamed into place."""
    with atomic_path(out) as temporary:
        model.save_pretrained(temporary)
        tokenizer.save_pretrained(temporary)


# tokens that end a turn in the chat templates of the supported families (ChatML, Llama 3, Llama 2)
END_OF_TURN_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "</s>")


def weights_digest(model_dir: Path) -> str:
    """SHA-256 of a model's safetensors files, to tie a measurement to the exact weights."""
    digest = hashlib.sha256()
    for path in sorted(Path(model_dir).glob("*.safetensors")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


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


@dataclass
class ModelPair:
    """A validated draft/target pair on one device."""

    name: str
    draft: PreTrainedModel
    target: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    draft_path: Path
    target_path: Path

    @property
    def vocab_size(self) -> int:
        """Logit columns both models share (embedding tables may be padded differently)."""
        return min(self.draft.config.vocab_size, self.target.config.vocab_size)

    @property
    def pad_token_id(self) -> int:
        """Padding id for batches (masked out); tokenizers without one pad with EOS."""
        pad = self.tokenizer.pad_token_id
        return pad if pad is not None else self.tokenizer.eos_token_id

    @property
    def eos_token_ids(self) -> set[int]:
        return eos_token_ids(self.tokenizer, getattr(self.target.generation_config, "eos_token_id", None))


def load_pair(
    name: str, draft_path: Path, target_path: Path, dtype: str = "float32", device: str = "cpu"
) -> ModelPair:
    """Load and validate a pair: both paths exist and both tokenizers are identical."""
    draft_tokenizer = load_tokenizer(draft_path, "draft")
    target_tokenizer = load_tokenizer(target_path, "target")
    check_same_tokenizer(draft_tokenizer, target_tokenizer, Path(draft_path), Path(target_path))
    torch_dtype = resolve_dtype(dtype)
    return ModelPair(
        name=name,
        draft=load_causal_lm(draft_path, torch_dtype, device, "draft"),
        target=load_causal_lm(target_path, torch_dtype, device, "target"),
        tokenizer=target_tokenizer,
        draft_path=Path(draft_path),
        target_path=Path(target_path),
    )


def model_signature(path: Path) -> str:
    """Cheap identity of a model directory: its config and the names and sizes of its weight files."""
    path = Path(path)
    digest = hashlib.sha256((path / "config.json").read_bytes())
    for weights in sorted(path.glob("*.safetensors")):
        digest.update(f"{weights.name}:{weights.stat().st_size}".encode())
    return digest.hexdigest()[:16]
