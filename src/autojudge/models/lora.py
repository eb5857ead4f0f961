"""Low-rank adapters (LoRA, Hu et al. 2021) on a causal LM's linear projections, saved apart and merged.

Each adapted projection ``y = W x`` becomes ``y = W x + (alpha / rank) * B A x`` with ``A`` [rank, in]
drawn small and ``B`` [out, rank] zero, so training starts from the model as it is and only ``A`` and
``B`` learn. The adapter alone is a few megabytes (small enough to commit); ``merge_adapter`` folds it
into the weights, after which any engine (transformers, vLLM) loads a plain checkpoint.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from transformers import PreTrainedModel

from autojudge.errors import InputError

PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class LoRALinear(nn.Module):
    """A frozen linear layer plus a trainable low-rank update."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float) -> None:
        super().__init__()
        self.base = base
        self.scale = alpha / rank
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
        base.weight.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.lora_a.T @ self.lora_b.T) * self.scale


def _projections(model: PreTrainedModel) -> dict[str, nn.Linear]:
    found = {
        name: module
        for name, module in model.named_modules()
        if isinstance(module, nn.Linear) and name.rsplit(".", 1)[-1] in PROJECTIONS
    }
    if not found:
        raise InputError(f"LoRA: the model has none of the projections {PROJECTIONS}")
    return found


def add_lora(model: PreTrainedModel, rank: int, alpha: float) -> list[nn.Parameter]:
    """Wrap every attention and MLP projection with an adapter; freeze the rest. Returns the trainable
    parameters (``A`` and ``B`` of each projection)."""
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    trainable = []
    for name, linear in _projections(model).items():
        parent_name, _, child = name.rpartition(".")
        wrapped = LoRALinear(linear, rank, alpha)
        setattr(model.get_submodule(parent_name), child, wrapped)
        trainable += [wrapped.lora_a, wrapped.lora_b]
    return trainable


def adapter_state(model: PreTrainedModel) -> dict[str, torch.Tensor]:
    """The adapter's tensors by module name (``<module>.lora_a`` / ``.lora_b``), detached copies."""
    return {
        f"{name}.{part}": getattr(module, part).detach().clone().contiguous()
        for name, module in model.named_modules()
        if isinstance(module, LoRALinear)
        for part in ("lora_a", "lora_b")
    }


def load_adapter_state(model: PreTrainedModel, state: dict[str, torch.Tensor]) -> None:
    """Put saved adapter tensors back into a model wrapped by ``add_lora`` (same rank and modules)."""
    modules = {name: m for name, m in model.named_modules() if isinstance(m, LoRALinear)}
    expected = {f"{name}.{part}" for name in modules for part in ("lora_a", "lora_b")}
    if set(state) != expected:
        raise InputError("LoRA adapter: its modules are not this model's (another base or another rank?)")
    with torch.no_grad():
        for key, tensor in state.items():
            name, part = key.rsplit(".", 1)
            getattr(modules[name], part).copy_(tensor)


def merge_adapter(model: PreTrainedModel, state: dict[str, torch.Tensor], alpha: float) -> None:
    """Fold a saved adapter into a plain model's weights in place: ``W += (alpha / rank) * B A``."""
    projections = _projections(model)
    with torch.no_grad():
        for key in sorted(k for k in state if k.endswith(".lora_a")):
            name = key.removesuffix(".lora_a")
            if name not in projections:
                raise InputError(f"LoRA adapter: the model has no projection {name} (another base?)")
            a, b = state[key], state[f"{name}.lora_b"]
            weight = projections[name].weight
            if (b.shape[0], a.shape[1]) != tuple(weight.shape):
                raise InputError(
                    f"LoRA adapter: {name} is {b.shape[0]}x{a.shape[1]}, the model's {weight.shape}"
                )
            weight += (alpha / a.shape[0]) * (b.float() @ a.float()).to(weight.dtype)
