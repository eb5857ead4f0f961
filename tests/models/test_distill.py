"""Distilling a draft from a target's first layers, on a tiny random Llama (fast) ."""

import pytest
import torch

from autojudge.errors import InputError
from autojudge.models.distill import agreement, distill, truncated_draft


@pytest.fixture(scope="module")
def rows(greedy_rows):
    return greedy_rows[:8]


def test_the_draft_keeps_the_first_layers_and_the_shared_weights(tiny_random_pair):
    target = tiny_random_pair.target
    draft = truncated_draft(target, 1)
    assert draft.config.num_hidden_layers == 1 and target.config.num_hidden_layers == 2
    kept = draft.state_dict()
    for name, tensor in target.state_dict().items():
        if ".layers.1." in name:
            assert name not in kept
        else:
            assert torch.equal(kept[name], tensor), name
    with pytest.raises(InputError, match="keeps 1 to 1 of the target's 2 layers"):
        truncated_draft(target, 2)


def test_distillation_raises_agreement_with_the_targets_greedy_tokens(tiny_random_pair, rows):
    pair = tiny_random_pair
    draft = truncated_draft(pair.target, 1)
    embeddings = draft.get_input_embeddings().weight.detach().clone()
    before = agreement(draft, pair.vocab_size, pair.pad_token_id, rows)
    losses = distill(draft, rows, steps=60, batch_size=4, learning_rate=3e-3, pad_token_id=pair.pad_token_id)
    after = agreement(draft, pair.vocab_size, pair.pad_token_id, rows)
    assert after > before + 0.2 and after > 0.5, (before, after)
    assert sum(losses[-10:]) < sum(losses[:10])
    assert torch.equal(draft.get_input_embeddings().weight, embeddings)  # shared with the target: frozen
