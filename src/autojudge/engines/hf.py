"""Generation with transformers: left-padded batches, greedy or seeded Gumbel-max."""

from __future__ import annotations

import torch
from transformers import LogitsProcessor, LogitsProcessorList, PreTrainedModel

from autojudge.engines.gumbel import gumbel_noise


class _PrefixGumbel(LogitsProcessor):
    """Adds per-prefix Gumbel noise to log-probabilities (pads stripped from each row)."""

    def __init__(self, seed: int, pads: list[int]) -> None:
        self.seed = seed
        self.pads = pads

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        noisy = torch.log_softmax(scores.float(), dim=-1)
        for row, pad in enumerate(self.pads):
            prefix = input_ids[row, pad:].tolist()
            noisy[row] += gumbel_noise(self.seed, prefix, scores.shape[-1]).to(scores.device)
        return noisy


class HFEngine:
    """Batched generation with a transformers causal LM."""

    name = "hf"

    def __init__(
        self,
        model: PreTrainedModel,
        pad_token_id: int,
        eos_token_ids: set[int],
        batch_size: int = 16,
        gumbel_seed: int | None = None,
    ) -> None:
        self.model = model
        self.pad_token_id = pad_token_id
        self.eos_token_ids = eos_token_ids
        self.batch_size = batch_size
        self.gumbel_seed = gumbel_seed
        self.device = next(model.parameters()).device

    def continue_prefixes(self, prefixes: list[list[int]], max_new_tokens: list[int]) -> list[list[int]]:
        outputs: list[list[int]] = [[] for _ in prefixes]
        # group prefixes of similar length to limit padding
        order = sorted((i for i, n in enumerate(max_new_tokens) if n > 0), key=lambda i: len(prefixes[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            for index, tokens in zip(
                chunk,
                self._generate([prefixes[i] for i in chunk], [max_new_tokens[i] for i in chunk]),
                strict=True,
            ):
                outputs[index] = tokens
        return outputs

    @torch.inference_mode()
    def _generate(self, prefixes: list[list[int]], caps: list[int]) -> list[list[int]]:
        width = max(len(p) for p in prefixes)
        pads = [width - len(p) for p in prefixes]
        ids = torch.full((len(prefixes), width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, prefix in enumerate(prefixes):
            ids[row, pads[row] :] = torch.tensor(prefix)
            mask[row, pads[row] :] = 1
        processors = LogitsProcessorList()
        if self.gumbel_seed is not None:
            processors.append(_PrefixGumbel(self.gumbel_seed, pads))
        generated = self.model.generate(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device),
            max_new_tokens=max(caps),
            do_sample=False,
            logits_processor=processors,
            eos_token_id=sorted(self.eos_token_ids),
            pad_token_id=self.pad_token_id,
        )[:, width:]
        results = []
        for row, cap in enumerate(caps):
            tokens = generated[row, :cap].tolist()
            for position, token in enumerate(tokens):
                if token in self.eos_token_ids:
                    tokens = tokens[: position + 1]
                    break
            results.append(tokens)
        return results

    def close(self) -> None:
        """Nothing to release: the model belongs to the caller."""
