"""Judge features: last-layer hidden states that encode each mismatching draft token (and, for heads that
read them, the state that predicted its slot and the rule scores of that state's logits).

For a mismatch at response position t with draft token d, the feature is the hidden state at
the position of d in prompt + response[:t] + [d] (AutoJudge section 3.2: "draft token
embeddings"), from the target, the draft, or both concatenated. Since Algorithm 1 never changes a
response before a tested position, every such sequence is a prefix of the final response plus one
token: where the response holds d at t (an unimportant mismatch) the feature is read off the response
itself; every other draft token (the important ones; every one of a checker-free SelfJudge response)
is appended to its problem's sequence at its own position, seeing only the prefix before it and itself.
One forward pass per problem then serves all of its mismatches, as a tree of one-token branches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm
from transformers import PreTrainedModel

from autojudge.features.groups import FeatureInputs, feature_rows, rule_scores
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
    context_index: int  # the trunk row whose state predicted the draft token's slot


@dataclass(frozen=True)
class BranchedSequence:
    """A problem's prompt + response (``trunk`` tokens, causal) followed by one-token branches: a branch at
    position ``p`` (``positions[trunk + j]``) sees the first ``p`` trunk tokens, its prefix, and itself."""

    tokens: list[int]
    positions: list[int]
    trunk: int


def plan_sequences(problems: list[MinedProblem]) -> tuple[list[BranchedSequence], list[MismatchRow]]:
    """The sequences to encode and, for every mismatch, which row of which sequence is its feature."""
    sequences: list[BranchedSequence] = []
    rows: list[MismatchRow] = []
    for problem in problems:
        if not problem.mismatches:
            continue
        prompt, response = problem.prompt_ids, problem.response_ids
        trunk = prompt + response
        branches: list[tuple[int, int]] = []  # (draft token, its position)
        for mismatch in problem.mismatches:
            at = len(prompt) + mismatch.position
            held = response[mismatch.position]
            if held not in (mismatch.target_token, mismatch.draft_token):
                raise ValueError(
                    f"problem {problem.id}: response does not hold the tested token at {mismatch.position}"
                )
            if held == mismatch.target_token:
                branches.append((mismatch.draft_token, at))
                index = len(trunk) + len(branches) - 1
            else:
                index = at
            rows.append(
                MismatchRow(
                    problem.id,
                    mismatch.position,
                    mismatch.target_token,
                    mismatch.draft_token,
                    mismatch.important,
                    len(sequences),
                    index,
                    at - 1,
                )
            )
        sequences.append(
            BranchedSequence(
                trunk + [token for token, _ in branches],
                list(range(len(trunk))) + [at for _, at in branches],
                len(trunk),
            )
        )
    return sequences, rows


def branch_mask(sequence: BranchedSequence, width: int, dtype: torch.dtype) -> torch.Tensor:
    """[width, width] additive mask: the trunk causal, each branch its prefix and itself, padding itself."""
    allowed = torch.ones(width, width, dtype=torch.bool).tril()
    allowed[sequence.trunk :] = torch.eye(width, dtype=torch.bool)[sequence.trunk :]
    for row in range(sequence.trunk, len(sequence.tokens)):
        allowed[row, : sequence.positions[row]] = True
    return torch.zeros(width, width, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)


@torch.inference_mode()
def last_hidden_states(
    model: PreTrainedModel, sequences: list[BranchedSequence], pad_token_id: int, batch_size: int, label: str
) -> list[torch.Tensor]:
    """Last-layer (post final norm) hidden states [len, H] of each sequence, in float32."""
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    decoder = model.base_model
    states: list[torch.Tensor] = [torch.empty(0)] * len(sequences)
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i].tokens))
    for start in tqdm(range(0, len(order), batch_size), desc=f"features {label}", mininterval=2):
        chunk = order[start : start + batch_size]
        width = max(len(sequences[i].tokens) for i in chunk)
        ids = torch.full((len(chunk), width), pad_token_id, dtype=torch.long)
        positions = torch.zeros_like(ids)
        mask = torch.empty(len(chunk), 1, width, width, dtype=dtype)
        for row, index in enumerate(chunk):
            sequence = sequences[index]
            ids[row, : len(sequence.tokens)] = torch.tensor(sequence.tokens)
            positions[row, : len(sequence.tokens)] = torch.tensor(sequence.positions)
            mask[row, 0] = branch_mask(sequence, width, dtype)
        hidden = (
            decoder(
                input_ids=ids.to(device), attention_mask=mask.to(device), position_ids=positions.to(device)
            )
            .last_hidden_state.float()
            .cpu()
        )
        for row, index in enumerate(chunk):
            states[index] = hidden[row, : len(sequences[index].tokens)]
    return states


CONTEXT_GROUPS = ("context_state", "rule_scores", "token_classes")  # read the state before the draft token


@dataclass(frozen=True)
class MismatchStates:
    """Every mismatch's hidden states, [M, H] per model that was encoded, and the mismatch of each row;
    ``context``/``scores``: the target state that predicted each slot and the rule scores of its logits,
    when a spec reads them."""

    rows: list[MismatchRow]
    target: torch.Tensor | None
    draft: torch.Tensor | None
    context: torch.Tensor | None = None
    scores: torch.Tensor | None = None
    choices: torch.Tensor | None = None  # [M] the argmax of the context state's logits

    def inputs(self) -> FeatureInputs:
        """What a verification step would hold for these rows (``autojudge.features.groups``)."""
        draft_tokens = torch.tensor([row.draft_token for row in self.rows], dtype=torch.long)
        return FeatureInputs(
            draft_tokens,
            self.target,
            self.draft,
            self.context,
            rule_scores=self.scores,
            target_tokens=self.choices,
        )

    def features(self, spec: FeatureSpec, token_class: torch.Tensor | None = None) -> np.ndarray:
        """Feature matrix [M, spec.dimension] of a head that reads ``spec`` (``token_class``: its table)."""
        if not self.rows:
            return np.zeros((0, spec.dimension), dtype=np.float32)
        return feature_rows(spec, self.inputs(), token_class).numpy().astype(np.float32)


def encode_mismatches(
    target: PreTrainedModel,
    draft: PreTrainedModel,
    problems: list[MinedProblem],
    specs: list[FeatureSpec],
    pad_token_id: int,
    batch_size: int = 16,
    vocab_size: int | None = None,
) -> MismatchStates:
    """The hidden states every head of ``specs`` reads, each model encoded once (``vocab_size``: the logits'
    width, for the rule scores)."""
    sequences, rows = plan_sequences(problems)
    sources = {model for spec in specs for model in spec.reads}
    with_context = any(set(spec.groups) & set(CONTEXT_GROUPS) for spec in specs)
    states: dict[str, list[torch.Tensor]] = {}

    def encode(model: PreTrainedModel, label: str, index: str) -> torch.Tensor | None:
        if not rows or (label not in sources and not (label == "target" and with_context)):
            return None
        if label not in states:
            states[label] = last_hidden_states(model, sequences, pad_token_id, batch_size, label)
        return torch.stack([states[label][row.sequence][getattr(row, index)] for row in rows])

    target_states = encode(target, "target", "index") if "target" in sources else None
    context = encode(target, "target", "context_index") if with_context else None
    scores = choices = None
    if context is not None:
        draft_tokens = torch.tensor([row.draft_token for row in rows], dtype=torch.long)
        scores, choices = _rule_scores(target, context, draft_tokens, vocab_size)
    return MismatchStates(rows, target_states, encode(draft, "draft", "index"), context, scores, choices)


@torch.inference_mode()
def _rule_scores(
    model: PreTrainedModel, context: torch.Tensor, draft_tokens: torch.Tensor, vocab_size: int | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """[M, 5] ``rule_scores`` of the target's logits from the context states and [M] their argmax (the
    target's greedy token, as verification takes it), in chunks of rows: [M, V] logits are never held."""
    head = model.get_output_embeddings()
    device, dtype = head.weight.device, head.weight.dtype
    scores, choices = [], []
    for start in range(0, len(context), 256):
        logits = head(context[start : start + 256].to(device, dtype)).float().cpu()[:, :vocab_size]
        scores.append(rule_scores(logits, draft_tokens[start : start + 256]))
        choices.append(logits.argmax(dim=-1))
    return torch.cat(scores), torch.cat(choices)


def extract_features(
    target: PreTrainedModel,
    draft: PreTrainedModel,
    problems: list[MinedProblem],
    spec: FeatureSpec,
    pad_token_id: int,
    batch_size: int = 16,
    token_class: torch.Tensor | None = None,
    vocab_size: int | None = None,
) -> tuple[np.ndarray, list[MismatchRow]]:
    """Feature matrix [mismatches, spec.dimension] and the mismatch each row belongs to."""
    states = encode_mismatches(target, draft, problems, [spec], pad_token_id, batch_size, vocab_size)
    return states.features(spec, token_class), states.rows
