"""Smoke test of fine-tuning on the real SmolLM2 checkpoint the suite converts once (`smollm2_run`)."""

import pytest
import torch
from safetensors.torch import load_file

from autojudge.models.finetuned_target import merged_target, train_target_adapter
from autojudge.params import FinetuneParams

pytestmark = pytest.mark.slow


def test_a_few_steps_train_an_adapter_that_merges_into_a_loadable_target(
    smollm2_run, smollm2_target, tmp_path, monkeypatch
):
    monkeypatch.chdir(smollm2_run)  # data/arith of the smoke-size run
    settings = FinetuneParams(
        base=smollm2_target, adapter=tmp_path / "adapter.safetensors", out=tmp_path / "target",
        problems=4, rank=4, alpha=8.0, steps=2, batch_size=2, eval_splits=["test"], eval_problems=2,
        eval_every=2, eval_batch_size=2, max_response_tokens=12,
        bf16_autocast=False,  # emulated, so slow, without AVX512-BF16; test_finetuned_target.py runs it
    )  # fmt: skip
    summary = train_target_adapter(settings, chat_template=True)
    assert [point["step"] for point in summary["curve"]] == [0, 2]
    assert summary["loss_first_10"] > 0 and summary["made_by"]["chat_template"]
    metrics = merged_target(settings, "smoke")
    assert metrics["trained_steps"] == 2 and metrics["base_parameters"] == 134_515_008
    # the saved checkpoints' tensors, read without building two 135M-parameter models
    merged, base = (
        load_file(directory / "model.safetensors") for directory in (settings.out, smollm2_target)
    )
    assert merged.keys() == base.keys()
    changed = [name for name, tensor in merged.items() if not torch.equal(tensor, base[name])]
    assert changed and all("proj" in name for name in changed)  # only the adapted projections moved
