"""Judge features: last-layer hidden states that encode each mismatching draft token.

For a mismatch at response position t with draft token d, the feature is the hidden state at
the position of d in prompt + response[:t] + [d] (AutoJudge section 3.2: "draft token
embeddings"), from the target, the draft, or both concatenated, in a parallel forward pass.
Since Algorithm 1 never changes a response before a tested position, the final response
already holds d at t for every unimportant mismatch: one pass over it serves all of them, and
only mismatches where the response kept the target's token (the important ones; every one of
a checker-free SelfJudge response) need their own sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm
from transformers import PreTrainedModel

from autojudge.features.spec import FeatureSpec
from autojudge.mining.search import MinedProblem


@dataclass(frozen=True)
class MismatchRow:
    """Where one mismatch's feature is read: sequence ``sequence`` at index ``index``."""

    problem_id: str
    position: int
    target_token: int
    draft_token: int
    important: bool
    sequence: int
    index: int


def plan_sequences(problems: list[MinedProblem]) -> tuple[list[list[int]], list[MismatchRow]]:
    """The sequences to encode and, for every mismatch, which row of which sequence is its feature."""
    sequences: list[list[int]] = []
    rows: list[MismatchRow] = []
    for problem in problems:
        if not problem.mismatches:
            continue
        prompt, response = problem.prompt_ids, problem.response_ids
        full = len(sequences)
        sequences.append(prompt + response)
        for mismatch in problem.mismatches:
            held = response[mismatch.position]
            if held not in (mismatch.target_token, mismatch.draft_token):
                raise ValueError(
                    f"problem {problem.id}: response does not hold the tested token at {mismatch.position}"
                )
            if held == mismatch.target_token:
                sequence = len(sequences)
                sequences.append(prompt + response[: mismatch.position] + [mismatch.draft_token])
            else:
                sequence = full
            rows.append(
                MismatchRow(
                    problem.id,
                    mismatch.position,
                    mismatch.target_token,
                    mismatch.draft_token,
                    mismatch.important,
                    sequence,
                    len(prompt) + mismatch.position,
                )
            )
    return sequences, rows


@torch.inference_mode()
def last_hidden_states(
    model: PreTrainedModel, sequences: list[list[int]], pad_token_id: int, batch_size: int, label: str
) -> list[torch.Tensor]:
    """Last-layer (post final norm) hidden states [len, H] of each sequence, in float32."""
    device = next(model.parameters()).device
    decoder = model.base_model
    states: list[torch.Tensor] = [torch.empty(0)] * len(sequences)
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
    for start in tqdm(range(0, len(order), batch_size), desc=f"features {label}", mininterval=2):
        chunk = order[start : start + batch_size]
        width = max(len(sequences[i]) for i in chunk)
        ids = torch.full((len(chunk), width), pad_token_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, index in enumerate(chunk):
            ids[row, : len(sequences[index])] = torch.tensor(sequences[index])
            mask[row, : len(sequences[index])] = 1
        hidden = (
            decoder(input_ids=ids.to(device), attention_mask=mask.to(device)).last_hidden_state.float().cpu()
        )
        for row, index in enumerate(chunk):
            states[index] = hidden[row, : len(sequences[index])]
    return states


def extract_features(
    target: PreTrainedModel,
    draft: PreTrainedModel,
    problems: list[MinedProblem],
    spec: FeatureSpec,
    pad_token_id: int,
    batch_size: int = 16,
) -> tuple[np.ndarray, list[MismatchRow]]:
    """Feature matrix [mismatches, spec.dimension] and the mismatch each row belongs to."""
    sequences, rows = plan_sequences(problems)
    if not rows:
        return np.zeros((0, spec.dimension), dtype=np.float32), rows
    target_states = (
        last_hidden_states(target, sequences, pad_token_id, batch_size, "target")
        if spec.source != "draft"
        else None
    )
    draft_states = (
        last_hidden_states(draft, sequences, pad_token_id, batch_size, "draft")
        if spec.source != "target"
        else None
    )
    features = []
    for row in rows:
        target_row = target_states[row.sequence][row.index] if target_states is not None else None
        draft_row = draft_states[row.sequence][row.index] if draft_states is not None else None
        features.append(spec.combine(target_row, draft_row))
    return torch.stack(features).numpy().astype(np.float32), rows
