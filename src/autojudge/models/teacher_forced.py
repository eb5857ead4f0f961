"""Teacher-forced predictions over a response (what a proposer drafts after each prefix); a draft model's in
one parallel forward pass per batch."""

from __future__ import annotations

from typing import Protocol

import torch
from transformers import PreTrainedModel

from autojudge.engines.gumbel import gumbel_noise


class TokenPredictor(Protocol):
    """The proposer's teacher-forced choice at every response position, and the logits it chose from ([n, V]
    per response; a draft model: :class:`DraftPredictor`; an EAGLE head:
    ``models.eagle_predictor.EaglePredictor``)."""

    def predict(self, prompts: list[list[int]], responses: list[list[int]]) -> list[list[int]]: ...

    def response_logits(self, prompts: list[list[int]], responses: list[list[int]]) -> list[torch.Tensor]: ...


class DraftPredictor:
    """For each response position i, the draft's choice given prompt + response[:i] (Algorithm 1, line 6)."""

    def __init__(
        self,
        model: PreTrainedModel,
        vocab_size: int,
        pad_token_id: int,
        batch_size: int = 16,
        gumbel_seed: int | None = None,
    ) -> None:
        self.model = model
        self.vocab_size = vocab_size
        self.pad_token_id = pad_token_id
        self.batch_size = batch_size
        self.gumbel_seed = gumbel_seed
        self.device = next(model.parameters()).device

    def predict(self, prompts: list[list[int]], responses: list[list[int]]) -> list[list[int]]:
        results: list[list[int]] = []
        for start in range(0, len(prompts), self.batch_size):
            results.extend(
                self._predict(
                    prompts[start : start + self.batch_size], responses[start : start + self.batch_size]
                )
            )
        return results

    @torch.inference_mode()
    def response_logits(self, prompts: list[list[int]], responses: list[list[int]]) -> list[torch.Tensor]:
        """Per response, [len(response), V] float32 logits: row i predicts response[i] from the prefix."""
        rows: list[torch.Tensor] = []
        for start in range(0, len(prompts), self.batch_size):
            chunk = slice(start, start + self.batch_size)
            rows.extend(self._logits(prompts[chunk], responses[chunk]))
        return rows

    def _logits(self, prompts: list[list[int]], responses: list[list[int]]) -> list[torch.Tensor]:
        sequences = [p + r for p, r in zip(prompts, responses, strict=True)]
        width = max(len(s) for s in sequences)
        ids = torch.full((len(sequences), width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, sequence in enumerate(sequences):  # right padding: positions before the pads are unaffected
            ids[row, : len(sequence)] = torch.tensor(sequence)
            mask[row, : len(sequence)] = 1
        logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
        logits = logits[..., : self.vocab_size].float()
        return [
            logits[row, len(prompt) - 1 : len(prompt) - 1 + len(response)]
            for row, (prompt, response) in enumerate(zip(prompts, responses, strict=True))
        ]

    @torch.inference_mode()
    def _predict(self, prompts: list[list[int]], responses: list[list[int]]) -> list[list[int]]:
        predictions = []
        for rows, prompt, response in zip(self._logits(prompts, responses), prompts, responses, strict=True):
            if self.gumbel_seed is None:
                predictions.append(rows.argmax(-1).tolist())
                continue
            log_probs = torch.log_softmax(rows, dim=-1)
            predictions.append(
                [
                    int(
                        (
                            log_probs[i]
                            + gumbel_noise(self.gumbel_seed, prompt + response[:i], self.vocab_size)
                        ).argmax()
                    )
                    for i in range(len(response))
                ]
            )
        return predictions
