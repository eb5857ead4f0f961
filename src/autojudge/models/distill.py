"""A draft for a real target: its first few layers, trained on the target's own greedy tokens.

Keeping a checkpoint's first layers gives a draft that shares its tokenizer, embeddings, final norm
and head, but it agrees with the target on few tokens (SmolLM2-135M: about 10% with 20 of its 30
layers). Training the kept layers on the target's greedy responses (sequence-level distillation:
cross-entropy on the target's tokens, embeddings and head frozen) teaches them what the target
writes; the bar of a usable draft is its teacher-forced agreement with the target's greedy tokens.
"""

from __future__ import annotations

import copy
import random

import torch
from tqdm import tqdm
from transformers import AutoModelForCausalLM, PreTrainedModel

from autojudge.errors import InputError
from autojudge.models.batches import padded_batch
from autojudge.models.teacher_forced import DraftPredictor

FROZEN = ("embed_tokens", "lm_head")


def is_frozen(name: str) -> bool:
    """Whether distillation leaves this parameter as the target has it (the shared embeddings and head)."""
    return any(part in name for part in FROZEN)


def truncated_draft(target: PreTrainedModel, layers: int) -> PreTrainedModel:
    """The target's config and weights with only its first ``layers`` decoder layers (float32)."""
    total = target.config.num_hidden_layers
    if not 0 < layers < total:
        raise InputError(f"a draft keeps 1 to {total - 1} of the target's {total} layers, got {layers}")
    config = copy.deepcopy(target.config)
    config.num_hidden_layers = layers
    if getattr(config, "layer_types", None):
        config.layer_types = config.layer_types[:layers]
    draft = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    kept = {
        name: tensor
        for name, tensor in target.state_dict().items()
        if ".layers." not in name or int(name.split(".layers.")[1].split(".")[0]) < layers
    }
    draft.load_state_dict(kept, strict=True)
    draft.tie_weights()
    return draft


def response_loss(
    draft: PreTrainedModel, ids: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor
) -> torch.Tensor:
    """Cross-entropy of the response tokens, logits computed at those positions only.

    The head's 49,152 columns (SmolLM2) dominate a step: computing them at prompt and padding
    positions too, as a causal LM's own loss does, takes 2.5 times as long on these batches.
    """
    hidden = draft.get_decoder()(input_ids=ids, attention_mask=mask).last_hidden_state[:, :-1]
    targets = labels[:, 1:]
    scored = targets != -100
    return torch.nn.functional.cross_entropy(draft.get_output_embeddings()(hidden[scored]), targets[scored])


def distill(
    draft: PreTrainedModel,
    rows: list[tuple[list[int], list[int]]],
    steps: int,
    batch_size: int,
    learning_rate: float,
    pad_token_id: int,
    seed: int = 0,
) -> list[float]:
    """Train the draft's decoder layers on (prompt, target greedy response) rows; the loss of each step."""
    if not rows:
        raise InputError("distillation needs at least one (prompt, response) row")
    for name, parameter in draft.named_parameters():
        parameter.requires_grad = not is_frozen(name)
    trained = [p for p in draft.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=learning_rate, weight_decay=0.0)
    order = random.Random(seed)
    torch.manual_seed(seed)
    draft.train()
    losses = []
    for _ in tqdm(range(steps), desc="distill", unit="step", mininterval=5):
        ids, mask, labels = padded_batch(order.sample(rows, min(batch_size, len(rows))), pad_token_id)
        loss = response_loss(draft, ids, mask, labels)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        optimizer.step()
        losses.append(float(loss.detach()))
    draft.eval()
    return losses


def agreement(
    draft: PreTrainedModel, vocab_size: int, pad_token_id: int, rows: list[tuple[list[int], list[int]]]
) -> float:
    """Share of response tokens where the draft's teacher-forced argmax is the target's greedy token."""
    prompts, responses = [p for p, _ in rows], [r for _, r in rows]
    predictions = DraftPredictor(draft, vocab_size, pad_token_id).predict(prompts, responses)
    same = sum(
        p == t
        for predicted, response in zip(predictions, responses, strict=True)
        for p, t in zip(predicted, response, strict=True)
    )
    return same / max(1, sum(len(r) for r in responses))
