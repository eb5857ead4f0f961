"""Teacher-forced continuation log-likelihoods under the target, from transformers or from vLLM."""

from __future__ import annotations

from typing import Any

import torch
from transformers import PreTrainedModel

from autojudge.selfjudge.score import continuation_logprob


class HFScorer:
    """Batched right-padded forward passes of a transformers causal LM (sequences grouped by length)."""

    def __init__(self, model: PreTrainedModel, pad_token_id: int, batch_size: int = 32) -> None:
        self.model = model
        self.pad_token_id = pad_token_id
        self.batch_size = batch_size
        self.device = next(model.parameters()).device

    def continuation_logprobs(self, sequences: list[list[int]], starts: list[int]) -> list[float]:
        results = [0.0] * len(sequences)
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        for first in range(0, len(order), self.batch_size):
            chunk = order[first : first + self.batch_size]
            logits = self._logits([sequences[i] for i in chunk])
            for row, index in enumerate(chunk):
                results[index] = continuation_logprob(logits[row], sequences[index], starts[index])
        return results

    @torch.inference_mode()
    def _logits(self, sequences: list[list[int]]) -> torch.Tensor:
        width = max(len(s) for s in sequences)
        ids = torch.full((len(sequences), width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, sequence in enumerate(sequences):  # right padding leaves earlier positions unchanged
            ids[row, : len(sequence)] = torch.tensor(sequence)
            mask[row, : len(sequence)] = 1
        return (
            self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device))
            .logits.float()
            .cpu()
        )


class VllmScorer:
    """Prompt log-probabilities from a vLLM ``LLM``: each sequence is a prompt, one token is generated."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    def continuation_logprobs(self, sequences: list[list[int]], starts: list[int]) -> list[float]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        sampling = SamplingParams(temperature=0.0, max_tokens=1, prompt_logprobs=0, detokenize=False)
        outputs = self.llm.generate(
            [TokensPrompt(prompt_token_ids=list(s)) for s in sequences], sampling, use_tqdm=False
        )
        results = []
        for sequence, start, output in zip(sequences, starts, outputs, strict=True):
            entries = output.prompt_logprobs  # [None, {token: Logprob}, ...], one per prompt token
            results.append(sum(entries[t][sequence[t]].logprob for t in range(start, len(sequence))))
        return results
