"""An EAGLE head for a Llama target, computing what vLLM's ``EagleLlamaForCausalLM`` computes.

vLLM 0.32 (``model_executor/models/llama_eagle.py``, method ``"eagle"`` of ``speculative_config``):
at position t the head reads the embedding of token t+1 and the target's hidden state at t (the last
layer's output after the final norm, the one the target's LM head reads), maps their concatenation
``[embedding; hidden]`` through ``fc`` (no bias) and one Llama decoder layer whose ``input_layernorm``
is the identity, and adds no final norm: that output is both the next "hidden state" of the chain and,
through the target's LM head, the logits of its guess for token t+2. The embedding and the LM head are
the target's (a checkpoint without them shares them), so a saved head holds ``fc.weight`` and
``layers.0.*`` only, names as vLLM loads them, and a Llama config with one layer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from torch.nn import functional
from tqdm import tqdm
from transformers import LlamaConfig, PreTrainedModel
from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

from autojudge.errors import InputError
from autojudge.io import atomic_path, write_json

WEIGHTS = "model.safetensors"


def head_config(target_config: LlamaConfig) -> LlamaConfig:
    """The target's config with one decoder layer: vLLM wraps a ``LlamaForCausalLM`` config as an
    ``EagleLlamaForCausalLM`` (``transformers_utils/configs/eagle.py``)."""
    if target_config.model_type != "llama":
        raise InputError(f"an EAGLE head needs a Llama target, got model_type {target_config.model_type!r}")
    values = {k: v for k, v in target_config.to_dict().items() if not k.startswith("_")}
    values.update(num_hidden_layers=1, architectures=["LlamaForCausalLM"])
    if values.get("layer_types"):
        values["layer_types"] = values["layer_types"][:1]
    config = LlamaConfig.from_dict(values)
    config._attn_implementation = "sdpa"
    return config


class EagleHead(nn.Module):
    """``fc([embed(token t+1); hidden t])``, one decoder layer without its input norm, no final norm.

    The target's embedding and LM head are kept as non-persistent buffers: frozen, never saved.
    """

    def __init__(self, config: LlamaConfig, embedding: torch.Tensor, lm_head: torch.Tensor) -> None:
        super().__init__()
        self.config = config
        size = config.hidden_size
        if embedding.shape[1] != size or lm_head.shape[1] != size:
            raise InputError(f"EAGLE head: the target's embedding and LM head must have width {size}")
        self.fc = nn.Linear(2 * size, size, bias=False)
        layer = LlamaDecoderLayer(config, layer_idx=0)
        layer.input_layernorm = nn.Identity()  # llama_eagle.py: disable_input_layernorm for layer 0
        self.layers = nn.ModuleList([layer])
        self.rotary_emb = LlamaRotaryEmbedding(config)
        self.register_buffer("embedding", embedding.detach(), persistent=False)
        self.register_buffer("lm_head", lm_head.detach(), persistent=False)

    def forward(self, tokens: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """Output hidden states ``(batch, length, hidden)`` for tokens t+1 and target hidden states t at
        positions 0..length-1 (causal attention; right padding leaves earlier positions unchanged)."""
        x = self.fc(
            torch.cat([functional.embedding(tokens, self.embedding), hidden.to(self.fc.weight.dtype)], dim=-1)
        )
        length = tokens.shape[1]
        positions = torch.arange(length, device=tokens.device).unsqueeze(0).expand(tokens.shape[0], -1)
        rotary = self.rotary_emb(x, positions)
        mask = torch.full((length, length), torch.finfo(x.dtype).min, dtype=x.dtype, device=x.device)
        mask = mask.triu(1)[None, None]
        for layer in self.layers:
            x = layer(x, attention_mask=mask, position_ids=positions, position_embeddings=rotary)
        return x

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The target's LM head (vLLM: ``compute_logits`` of the shared ``lm_head``, no norm first)."""
        return functional.linear(hidden, self.lm_head)

    def weights(self) -> dict[str, torch.Tensor]:
        """The trained tensors by the names vLLM's loader expects (``fc.weight``, ``layers.0.…``)."""
        return {name: p.detach() for name, p in self.named_parameters()}


def new_head(target: PreTrainedModel, seed: int = 0) -> EagleHead:
    """A head for ``target``, its linear weights drawn from N(0, initializer_range²) with ``seed``."""
    config = head_config(target.config)
    head = EagleHead(config, target.get_input_embeddings().weight, target.get_output_embeddings().weight)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in head.named_parameters():
            if name.endswith("layernorm.weight"):
                parameter.fill_(1.0)
            else:
                parameter.normal_(0.0, config.initializer_range, generator=generator)
    return head.to(torch.float32)


def save_head(head: EagleHead, out: Path) -> None:
    """``config.json`` and ``model.safetensors`` at ``out``, written beside it and renamed into place."""
    with atomic_path(out) as temporary:
        temporary.mkdir()
        config = {k: v for k, v in head.config.to_dict().items() if not k.startswith("_")}
        write_json(temporary / "config.json", config)
        save_file(
            {k: v.contiguous() for k, v in head.weights().items()}, temporary / WEIGHTS, {"format": "pt"}
        )


def load_head(directory: Path, target: PreTrainedModel) -> EagleHead:
    """A head saved by `save_head`, on ``target``'s embedding and LM head."""
    directory = Path(directory)
    if not (directory / "config.json").is_file() or not (directory / WEIGHTS).is_file():
        raise InputError(f"EAGLE head: {directory} has no config.json and {WEIGHTS}")
    config = head_config(LlamaConfig.from_dict(json.loads((directory / "config.json").read_text())))
    head = EagleHead(config, target.get_input_embeddings().weight, target.get_output_embeddings().weight)
    weights = load_file(directory / WEIGHTS)
    expected = set(head.weights())
    if set(weights) != expected:
        raise InputError(f"EAGLE head: {directory} holds {sorted(set(weights) ^ expected)} unlike a head")
    head.load_state_dict(weights)
    return head.to(torch.float32).eval()


@dataclass
class EagleExamples:
    """Teacher-forced rows, one per token sequence x_0..x_{n-1}.

    ``tokens`` holds x_1..x_{n-1} (the head's input tokens), ``hidden`` the target's final hidden states
    H_0..H_{n-1}: head position t reads (x_{t+1}, H_t) and should output H_{t+1}, whose logits are the
    target's distribution of token t+2. ``scored`` marks the positions that count (input token generated).
    """

    tokens: list[torch.Tensor]
    hidden: list[torch.Tensor]
    scored: list[torch.Tensor]

    def __len__(self) -> int:
        return len(self.tokens)

    def positions(self) -> int:
        return int(sum(s.sum() for s in self.scored))

    def batch(self, rows: list[int]) -> tuple[torch.Tensor, ...]:
        """Right-padded ``tokens, hidden_in, hidden_next, scored`` of ``rows``."""
        width = max(len(self.tokens[r]) for r in rows)
        size = self.hidden[rows[0]].shape[1]
        tokens = torch.zeros(len(rows), width, dtype=torch.long)
        hidden_in = torch.zeros(len(rows), width, size)
        hidden_next = torch.zeros(len(rows), width, size)
        scored = torch.zeros(len(rows), width, dtype=torch.bool)
        for i, r in enumerate(rows):
            n = len(self.tokens[r])
            tokens[i, :n] = self.tokens[r]
            hidden_in[i, :n] = self.hidden[r][:-1]
            hidden_next[i, :n] = self.hidden[r][1:]
            scored[i, :n] = self.scored[r]
        return tokens, hidden_in, hidden_next, scored


@torch.no_grad()  # not inference mode: the training loss reads these tensors
def target_hidden_states(target: PreTrainedModel, sequences: list[list[int]], batch_size: int = 16) -> list:
    """The target's last-layer hidden states after the final norm, one ``(n, hidden)`` tensor per sequence
    (what vLLM's Llama returns to the runner and the EAGLE proposer reads, ``models/llama.py``)."""
    states = []
    for start in range(0, len(sequences), batch_size):
        chunk = sequences[start : start + batch_size]
        width = max(len(s) for s in chunk)
        ids = torch.zeros(len(chunk), width, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, sequence in enumerate(chunk):
            ids[row, : len(sequence)] = torch.tensor(sequence)
            mask[row, : len(sequence)] = 1
        hidden = target.get_decoder()(input_ids=ids, attention_mask=mask).last_hidden_state.float()
        states.extend(hidden[row, : len(s)].clone() for row, s in enumerate(chunk))
    return states


def build_examples(
    target: PreTrainedModel,
    sequences: list[list[int]],
    prompt_lengths: list[int] | None = None,
    batch_size: int = 16,
) -> EagleExamples:
    """Teacher-forced rows of ``sequences`` (prompt + response tokens); with ``prompt_lengths``, only the
    positions whose input token is a response token are scored (those where vLLM drafts)."""
    if not sequences:
        raise InputError("EAGLE examples need at least one token sequence")
    prompt_lengths = prompt_lengths or [0] * len(sequences)
    if len(prompt_lengths) != len(sequences):
        raise InputError(
            f"EAGLE examples: {len(prompt_lengths)} prompt lengths for {len(sequences)} sequences"
        )
    for index, sequence in enumerate(sequences):
        if len(sequence) < 2:
            raise InputError(f"EAGLE examples: sequence {index} has {len(sequence)} tokens, needs at least 2")
    hidden = []
    for start in tqdm(range(0, len(sequences), 256), desc="eagle examples", unit="x256", mininterval=5):
        hidden.extend(target_hidden_states(target, sequences[start : start + 256], batch_size))
    tokens = [torch.tensor(s[1:], dtype=torch.long) for s in sequences]
    scored = [torch.arange(len(s) - 1) + 1 >= p for s, p in zip(sequences, prompt_lengths, strict=True)]
    return EagleExamples(tokens, hidden, scored)


@torch.inference_mode()
def agreement(head: EagleHead, examples: EagleExamples, batch_size: int = 32) -> float:
    """Share of scored positions where the head's argmax is the target's (teacher-forced, first draft)."""
    same = total = 0
    for start in range(0, len(examples), batch_size):
        tokens, hidden_in, hidden_next, scored = examples.batch(
            list(range(start, min(start + batch_size, len(examples))))
        )
        guess = head.logits(head(tokens, hidden_in)[scored]).argmax(-1)
        same += int((guess == head.logits(hidden_next[scored]).argmax(-1)).sum())
        total += int(scored.sum())
    return same / max(1, total)
