"""Loading a draft/target pair, with validation: a draft causal LM sharing the target's tokenizer, or an EAGLE
head on the target (``pair.proposer``); saving a checkpoint."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, PreTrainedModel, PreTrainedTokenizerBase

from autojudge.errors import InputError
from autojudge.io import atomic_path
from autojudge.models import eagle
from autojudge.models.tokenizer import check_same_tokenizer, eos_token_ids, load_tokenizer, model_dir

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


def load_causal_lm(
    path: Path, dtype: torch.dtype, device: str = "cpu", role: str = "model"
) -> PreTrainedModel:
    """A causal LM in eval mode with the given dtype."""
    path = model_dir(path, role)
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


def weights_digest(model_dir: Path) -> str:
    """SHA-256 of a model's safetensors files, to tie a measurement to the exact weights."""
    digest = hashlib.sha256()
    for path in sorted(Path(model_dir).glob("*.safetensors")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


@dataclass
class ModelPair:
    """A validated draft/target pair on one device; ``draft`` is an EAGLE head when ``proposer`` is eagle."""

    name: str
    draft: PreTrainedModel | eagle.EagleHead
    target: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    draft_path: Path
    target_path: Path
    proposer: str = "draft_model"

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
    name: str,
    draft_path: Path,
    target_path: Path,
    dtype: str = "float32",
    device: str = "cpu",
    proposer: str = "draft_model",
) -> ModelPair:
    """Load and validate a pair: both paths exist, and a draft model's tokenizer is the target's (an EAGLE
    head, ``proposer`` eagle, reads the target's tokens and must fit its hidden size)."""
    target_tokenizer = load_tokenizer(target_path, "target")
    if proposer != "eagle":
        draft_tokenizer = load_tokenizer(draft_path, "draft")
        check_same_tokenizer(draft_tokenizer, target_tokenizer, Path(draft_path), Path(target_path))
    torch_dtype = resolve_dtype(dtype)
    target = load_causal_lm(target_path, torch_dtype, device, "target")
    if proposer == "eagle":
        draft = eagle.load_head(Path(draft_path), target).to(device)
    else:
        draft = load_causal_lm(draft_path, torch_dtype, device, "draft")
    return ModelPair(name, draft, target, target_tokenizer, Path(draft_path), Path(target_path), proposer)


def model_signature(path: Path) -> str:
    """Cheap identity of a model directory: its config and the names and sizes of its weight files."""
    path = Path(path)
    digest = hashlib.sha256((path / "config.json").read_bytes())
    for weights in sorted(path.glob("*.safetensors")):
        digest.update(f"{weights.name}:{weights.stat().st_size}".encode())
    return digest.hexdigest()[:16]
