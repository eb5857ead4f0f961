"""Incremental forward passes of one causal LM over a growing sequence, with a KV cache."""

from __future__ import annotations

import torch
from transformers import DynamicCache, PreTrainedModel


class CachedRunner:
    """Feeds tokens to a model step by step, keeping its KV cache; can roll the cache back."""

    def __init__(self, model: PreTrainedModel, vocab_size: int) -> None:
        self.model = model
        self.decoder = model.base_model
        self.lm_head = model.get_output_embeddings()
        self.vocab_size = vocab_size
        self.device = next(model.parameters()).device
        self.cache = DynamicCache()
        self.length = 0  # tokens already in the cache
        self.passes = 0

    def reset(self) -> None:
        self.cache = DynamicCache()
        self.length = 0
        self.passes = 0

    @torch.inference_mode()
    def forward(self, tokens: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """Run ``tokens`` after the cached prefix; returns logits [T, V] and last-layer states [T, H]."""
        input_ids = torch.tensor([tokens], dtype=torch.long, device=self.device)
        output = self.decoder(input_ids=input_ids, past_key_values=self.cache, use_cache=True)
        hidden = output.last_hidden_state[0]
        logits = self.lm_head(hidden)[:, : self.vocab_size]
        self.length += len(tokens)
        self.passes += 1
        return logits, hidden

    def truncate(self, length: int) -> None:
        """Forget every cached token from position ``length`` on."""
        if length < self.length:
            self.cache.crop(length - self.length)  # a negative count removes that many trailing tokens
            self.length = length
