"""An EAGLE head's teacher-forced guesses over a response: what vLLM's ``eagle`` proposer drafts first.

Algorithm 1 (line 6) needs, at each response position, the token the proposer would draft there given
the prefix. For a draft model that is its argmax after the prefix
(:class:`autojudge.models.teacher_forced.DraftPredictor`). For an EAGLE head it is the first draft of a
cycle whose accepted prefix ends just before that position: to guess token p the head reads token p-1 and
the target's hidden state at p-2 (:mod:`autojudge.models.eagle`), exactly as vLLM feeds it, so one target
pass and one head pass over prompt + response give every position's guess.
"""

from __future__ import annotations

import torch
from transformers import PreTrainedModel

from autojudge.errors import InputError
from autojudge.models.eagle import EagleHead, target_hidden_states


class EaglePredictor:
    """For each response position i, the head's first draft given prompt + response[:i] (greedy), and the
    logits it drafts from (the first ``vocab_size`` columns of the target's LM head)."""

    def __init__(
        self, head: EagleHead, target: PreTrainedModel, vocab_size: int, batch_size: int = 16
    ) -> None:
        self.head = head
        self.target = target
        self.vocab_size = vocab_size
        self.batch_size = batch_size

    def predict(self, prompts: list[list[int]], responses: list[list[int]]) -> list[list[int]]:
        return [rows.argmax(-1).tolist() for rows in self.response_logits(prompts, responses)]

    @torch.inference_mode()
    def response_logits(self, prompts: list[list[int]], responses: list[list[int]]) -> list[torch.Tensor]:
        """Per response, [len(response), V] float32 logits: row i drafts response[i] from the prefix."""
        for index, prompt in enumerate(prompts):
            if len(prompt) < 2:
                raise InputError(
                    f"EAGLE predictions: prompt {index} has {len(prompt)} tokens, needs at least 2"
                )
        rows: list[torch.Tensor] = []
        for start in range(0, len(prompts), self.batch_size):
            chunk = slice(start, start + self.batch_size)
            rows.extend(self._logits(prompts[chunk], responses[chunk]))
        return rows

    def _logits(self, prompts: list[list[int]], responses: list[list[int]]) -> list[torch.Tensor]:
        sequences = [p + r for p, r in zip(prompts, responses, strict=True)]
        hidden = target_hidden_states(self.target, sequences, self.batch_size)
        width = max(len(s) for s in sequences) - 1
        tokens = torch.zeros(len(sequences), width, dtype=torch.long)
        states = torch.zeros(len(sequences), width, hidden[0].shape[1])
        for row, (sequence, rows) in enumerate(zip(sequences, hidden, strict=True)):
            # head position t reads (token t+1, hidden state t); right padding leaves earlier rows alone
            tokens[row, : len(sequence) - 1] = torch.tensor(sequence[1:])
            states[row, : len(sequence) - 1] = rows[:-1]
        output = self.head(tokens, states)
        # token p is drafted at head position p - 2
        return [
            self.head.logits(output[row, len(prompt) - 2 : len(prompt) - 2 + len(response)])[
                :, : self.vocab_size
            ].float()
            for row, (prompt, response) in enumerate(zip(prompts, responses, strict=True))
        ]
