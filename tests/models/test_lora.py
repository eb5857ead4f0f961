"""LoRA adapters on a tiny random Llama: a no-op at start, merged weights equal the adapted model."""

import pytest
import torch

from autojudge.errors import InputError
from autojudge.models.lora import LoRALinear, adapter_state, add_lora, load_adapter_state, merge_adapter
from autojudge.models.pair import load_causal_lm


def _logits(model, ids):
    with torch.no_grad():
        return model(ids).logits


def test_an_adapter_starts_as_a_no_op_trains_alone_and_merges_into_the_same_model(tiny_random_pair):
    path = tiny_random_pair.target_path
    model, plain = load_causal_lm(path, torch.float32), load_causal_lm(path, torch.float32)
    ids = torch.tensor([[1, 5, 9, 13, 2, 7]])
    before = _logits(model, ids)
    trainable = add_lora(model, rank=4, alpha=8.0)
    assert torch.equal(_logits(model, ids), before)  # B starts at zero
    wrapped = [m for m in model.modules() if isinstance(m, LoRALinear)]
    assert len(wrapped) == 7 * model.config.num_hidden_layers  # q k v o gate up down of every layer
    assert {id(p) for p in model.parameters() if p.requires_grad} == {id(p) for p in trainable}
    with torch.no_grad():
        for module in wrapped:
            module.lora_b.normal_(std=0.05)
    adapted = _logits(model, ids)
    assert not torch.allclose(adapted, before)
    merge_adapter(plain, adapter_state(model), alpha=8.0)
    torch.testing.assert_close(_logits(plain, ids), adapted, atol=1e-5, rtol=1e-5)


def test_an_adapter_of_another_shape_or_module_set_is_refused(tiny_random_pair):
    path = tiny_random_pair.target_path
    model = load_causal_lm(path, torch.float32)
    add_lora(model, rank=4, alpha=8.0)
    state = adapter_state(model)
    other = load_causal_lm(path, torch.float32)
    add_lora(other, rank=2, alpha=8.0)
    load_adapter_state(other, {k: torch.zeros_like(v) for k, v in adapter_state(other).items()})
    with pytest.raises(InputError, match="not this model's"):
        load_adapter_state(other, {k: v for k, v in state.items() if "layers.0." not in k})
    key = next(k for k in state if k.endswith("q_proj.lora_b"))
    wrong = {**state, key: torch.zeros(state[key].shape[0] + 1, 4)}
    with pytest.raises(InputError, match="q_proj is"):
        merge_adapter(load_causal_lm(path, torch.float32), wrong, alpha=8.0)
