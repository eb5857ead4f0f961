"""A draft's LoRA adapter on a tiny random Llama: trained until held-out agreement stalls, resumed, rebuilt."""

import pytest
import torch
from safetensors.torch import save_file

from autojudge.errors import InputError
from autojudge.models import lora_draft
from autojudge.models.distill import agreement, truncated_draft
from autojudge.models.lora_draft import (
    DraftTraining,
    adapted_draft,
    read_adapter,
    save_adapter,
    train_draft_adapter,
)


@pytest.fixture(scope="module")
def rows(greedy_rows):
    """12 rows to train on, 4 held out."""
    return greedy_rows[:12], greedy_rows[12:]


def _settings(**changes) -> DraftTraining:
    values = dict(
        layers=1, rank=4, max_steps=30, batch_size=4, learning_rate=5e-3, eval_every=5, checkpoint_every=5
    )
    return DraftTraining(**{**values, **changes})


def test_the_adapter_raises_agreement_and_rebuilds_as_a_plain_draft(tiny_random_pair, rows, tmp_path):
    pair, (train, held_out) = tiny_random_pair, rows
    weights, curve = train_draft_adapter(
        pair.target, train, held_out, _settings(), pair.pad_token_id, tmp_path
    )
    assert curve["best_agreement"] > curve["points"][0]["agreement"]
    assert all(name.endswith((".lora_a", ".lora_b")) for name in weights)
    assert (
        sum(t.numel() for t in weights.values())
        < sum(p.numel() for p in truncated_draft(pair.target, 1).parameters()) / 4
    )
    save_adapter(tmp_path / "adapter.safetensors", weights, _settings())
    assert read_adapter(tmp_path / "adapter.safetensors")[1] == _settings()
    draft = adapted_draft(pair.target, tmp_path / "adapter.safetensors")  # merged: no adapter modules left
    assert draft.config.num_hidden_layers == 1 and not any("lora" in n for n, _ in draft.named_parameters())
    merged = agreement(draft, pair.vocab_size, pair.pad_token_id, held_out)
    assert merged == pytest.approx(curve["best_agreement"], abs=1e-9)


def test_bfloat16_products_train_the_adapter_too(tiny_random_pair, rows, tmp_path):
    pair, (train, held_out) = tiny_random_pair, rows
    weights, curve = train_draft_adapter(
        pair.target, train, held_out, _settings(bf16_autocast=True), pair.pad_token_id, tmp_path
    )
    assert curve["best_agreement"] > curve["points"][0]["agreement"]
    assert all(t.dtype == torch.float32 for t in weights.values())  # autocast: the adapter stays float32


def test_a_resumed_run_ends_where_an_uninterrupted_one_does(tiny_random_pair, rows, tmp_path, monkeypatch):
    pair, (train, held_out) = tiny_random_pair, rows
    whole, whole_curve = train_draft_adapter(
        pair.target, train, held_out, _settings(), pair.pad_token_id, tmp_path / "a"
    )
    real_loss, calls = lora_draft.response_loss, []

    def interrupted(*args):
        calls.append(1)
        if len(calls) > 12:  # after the checkpoint at step 10
            raise KeyboardInterrupt
        return real_loss(*args)

    monkeypatch.setattr(lora_draft, "response_loss", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train_draft_adapter(pair.target, train, held_out, _settings(), pair.pad_token_id, tmp_path / "b")
    monkeypatch.setattr(lora_draft, "response_loss", real_loss)
    resumed, resumed_curve = train_draft_adapter(
        pair.target, train, held_out, _settings(), pair.pad_token_id, tmp_path / "b"
    )
    assert resumed_curve == whole_curve
    assert all(torch.equal(resumed[k], whole[k]) for k in whole)
    with pytest.raises(InputError, match="other settings or data"):
        train_draft_adapter(
            pair.target, train, held_out, _settings(rank=2), pair.pad_token_id, tmp_path / "b"
        )


def test_bad_settings_and_missing_files_are_refused(tmp_path):
    with pytest.raises(InputError, match="patience must be at least 1"):
        _settings(patience=0)
    with pytest.raises(InputError, match="no draft adapter"):
        read_adapter(tmp_path / "missing.safetensors")
    save_file({"x": torch.zeros(1)}, str(tmp_path / "other.safetensors"))
    with pytest.raises(InputError, match="not a draft adapter"):
        read_adapter(tmp_path / "other.safetensors")
