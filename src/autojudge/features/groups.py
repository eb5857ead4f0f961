"""Feature rows of a judge head from what one verification step computed: one implementation for the
features stage (teacher-forced mined mismatches), the comparison's grids and decodes, and the vLLM plugin.

``FeatureInputs`` holds, per draft row, the tensors a step has: the hidden state reading the draft token,
the one that predicted its slot, the target's logits there (or the rule scores already taken from them,
when the logits are too large to keep) and the draft token. ``feature_rows`` concatenates the groups of a
``FeatureSpec`` (``autojudge.features.spec``) in its order.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import torch

from autojudge.errors import InputError
from autojudge.features.spec import TOKEN_CLASSES, FeatureSpec

LOG_FLOOR = -100.0  # a token the target cannot emit (-inf processed logit) scores this log-probability


@dataclass(frozen=True)
class FeatureInputs:
    """Per draft row n: what the step computed (None: not computed; a group that needs it refuses)."""

    draft_tokens: torch.Tensor  # [N]
    target_hidden: torch.Tensor | None = None  # [N, H] target state reading the draft token
    draft_hidden: torch.Tensor | None = None  # [N, Hd] draft state reading it
    context_hidden: torch.Tensor | None = None  # [N, H] target state that predicted the slot
    target_logits: torch.Tensor | None = None  # [N, V] target logits at the slot
    rule_scores: torch.Tensor | None = None  # [N, 5] ``rule_scores(target_logits, draft_tokens)``
    target_tokens: torch.Tensor | None = None  # [N] the target's greedy token at the slot


def rule_scores(logits: torch.Tensor, draft: torch.Tensor) -> torch.Tensor:
    """[N, 5] float32: log p(draft), log p(top-1), their gap, entropy, log(1 + rank of draft) (rank 0: top)."""
    logits = logits.float()
    index = draft.long().clamp(min=0).unsqueeze(-1)
    log_probs = logits.log_softmax(dim=-1)
    drafted = log_probs.gather(-1, index).squeeze(-1).clamp(min=LOG_FLOOR)
    top = log_probs.max(dim=-1).values
    entropy = -(log_probs.exp() * log_probs.clamp(min=LOG_FLOOR)).sum(dim=-1)
    rank = (logits > logits.gather(-1, index)).sum(dim=-1).float()
    return torch.stack([drafted, top, top - drafted, entropy, rank.log1p()], dim=-1)


def token_class_table(tokenizer) -> torch.Tensor:
    """[len(tokenizer)] int8: the class of every token id's text (``TOKEN_CLASSES``: digit, space,
    punctuation, word); ids beyond it (padded vocabularies) take the last id's class."""
    texts = tokenizer.batch_decode([[token_id] for token_id in range(len(tokenizer))])
    return torch.tensor([TOKEN_CLASSES.index(_token_class(text)) for text in texts], dtype=torch.int8)


def _token_class(text: str) -> str:
    if any(char.isdigit() for char in text):
        return "digit"
    if not text.strip():
        return "space"
    if all(unicodedata.category(char).startswith(("P", "S")) for char in text.strip()):
        return "punctuation"
    return "word"


def _one_hot_classes(table: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    ids = tokens.long().clamp(min=0, max=table.shape[0] - 1)
    classes = table.to(tokens.device)[ids].long()
    return torch.nn.functional.one_hot(classes, len(TOKEN_CLASSES)).float()


def feature_rows(spec: FeatureSpec, inputs: FeatureInputs, token_class: torch.Tensor | None) -> torch.Tensor:
    """[N, spec.dimension] float32 feature rows; ``token_class``: the head's ``token_class_table``."""
    parts = []
    for group in spec.groups:
        if group == "token_state":
            needed = {"target": (inputs.target_hidden,), "draft": (inputs.draft_hidden,)}.get(
                spec.source, (inputs.target_hidden, inputs.draft_hidden)
            )
            parts += [_required(part, f"{spec.source} hidden states at the draft token") for part in needed]
        elif group == "context_state":
            parts.append(_required(inputs.context_hidden, "the target state that predicted the draft slot"))
        elif group == "rule_scores":
            scores = inputs.rule_scores
            if scores is None:
                logits = _required(inputs.target_logits, "the target's logits at the draft slot")
                scores = rule_scores(logits, inputs.draft_tokens)
            parts.append(scores)
        else:
            table = _required(token_class, "the head's token class table")
            target = inputs.target_tokens
            if target is None:
                target = _required(inputs.target_logits, "the target's logits at the draft slot").argmax(-1)
            parts += [_one_hot_classes(table, inputs.draft_tokens), _one_hot_classes(table, target)]
    return torch.cat([part.float() for part in parts], dim=-1)


def _required(tensor: torch.Tensor | None, what: str) -> torch.Tensor:
    if tensor is None:
        raise InputError(f"autojudge: this judge head reads {what}, which were not computed")
    return tensor
