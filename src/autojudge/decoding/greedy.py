"""Plain greedy decoding with one model (the target-only and draft-only baselines)."""

from __future__ import annotations

import time

from transformers import PreTrainedModel

from autojudge.decoding.generation import DecodeStats, Generation, clip_at_stop
from autojudge.decoding.runner import CachedRunner


class GreedyDecoder:
    """Greedy decoding, one forward pass per token, with a KV cache."""

    def __init__(
        self,
        model: PreTrainedModel,
        vocab_size: int,
        eos_ids: set[int],
        max_new_tokens: int,
        role: str = "target",
    ) -> None:
        if role not in ("target", "draft"):
            raise ValueError(f"role must be 'target' or 'draft', got {role!r}")
        self.role = role
        self.runner = CachedRunner(model, vocab_size)
        self.eos_ids = eos_ids
        self.max_new_tokens = max_new_tokens

    def generate(self, prompt: list[int]) -> Generation:
        started = time.perf_counter()
        self.runner.reset()
        generated: list[int] = []
        pending = list(prompt)
        finished = False
        while len(generated) < self.max_new_tokens and not finished:
            logits, _ = self.runner.forward(pending)
            token = int(logits[-1].argmax())
            generated, finished = clip_at_stop([*generated, token], self.eos_ids, self.max_new_tokens)
            pending = [token]
        stats = DecodeStats(tokens=len(generated))
        if self.role == "target":
            stats.target_passes = self.runner.passes
        else:
            stats.draft_passes = self.runner.passes
        stats.seconds = time.perf_counter() - started
        return Generation(tokens=generated, stats=stats, finished=finished)
