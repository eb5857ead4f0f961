"""Stage finetune's work on a tiny random Llama: a resumable LoRA run, the merged target, a wrong base refused."""

import shutil

import pytest
import torch

from autojudge.errors import InputError
from autojudge.models.finetune import checkpoint_path, curve_path, learning_rate_at, read_adapter
from autojudge.models.finetuned_target import merged_target, train_target_adapter
from autojudge.models.pair import load_causal_lm
from autojudge.params import FinetuneParams


@pytest.fixture
def workdir(tmp_path, monkeypatch, arith_dir):
    """A project directory holding data/arith (the stage reads data/<task>)."""
    shutil.copytree(arith_dir, tmp_path / "data" / "arith")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _settings(base, workdir, name, **changes) -> FinetuneParams:
    values = dict(
        base=base, adapter=workdir / name / "adapter.safetensors", out=workdir / name / "target",
        problems=12, rank=2, alpha=4.0, steps=4, batch_size=3, learning_rate=0.01, bf16_autocast=False,
        eval_problems=2, eval_every=2, eval_batch_size=2, max_response_tokens=6,
    )  # fmt: skip
    return FinetuneParams(**{**values, **changes})


def test_an_interrupted_run_resumes_to_the_same_adapter_and_merges_into_the_target(workdir, tiny_random_pair):
    base = tiny_random_pair.target_path
    whole = train_target_adapter(_settings(base, workdir, "whole"), chat_template=False)
    assert [point["step"] for point in whole["curve"]] == [0, 2, 4]
    assert set(whole["curve"][0]) == {"step", "test", "unseen"}

    halves = _settings(base, workdir, "halves")
    train_target_adapter(halves.model_copy(update={"steps": 2}), chat_template=False)
    assert checkpoint_path(halves.adapter).is_file()
    resumed = train_target_adapter(halves, chat_template=False)  # goes on from step 2
    assert resumed["curve"] == whole["curve"] and resumed["made_by"] == whole["made_by"]
    (first, _, steps, _), (second, _, _, _) = (
        read_adapter(halves.adapter),
        read_adapter(workdir / "whole" / "adapter.safetensors"),
    )
    assert steps == 4 and first.keys() == second.keys()
    for key in first:
        torch.testing.assert_close(first[key], second[key])
    assert curve_path(halves.adapter).is_file() and curve_path(halves.adapter).with_suffix(".png").is_file()

    metrics = merged_target(halves, "halves")
    assert metrics["trained_steps"] == 4 and 0 < metrics["adapter_parameters"] < metrics["base_parameters"]
    merged, base_model = load_causal_lm(halves.out, torch.float32), load_causal_lm(base, torch.float32)
    assert any(
        not torch.equal(a, b) for a, b in zip(merged.parameters(), base_model.parameters(), strict=True)
    )


def test_an_adapter_trained_on_another_base_is_refused_naming_the_entry(workdir, tiny_random_pair):
    settings = _settings(
        tiny_random_pair.target_path, workdir, "one", steps=1, eval_every=1, bf16_autocast=True
    )
    train_target_adapter(settings, chat_template=False)  # the bfloat16 autocast path, on a tiny model
    elsewhere = settings.model_copy(update={"base": tiny_random_pair.draft_path})
    with pytest.raises(InputError, match=r"finetune\.other: adapter .* was trained on another base"):
        merged_target(elsewhere, "other")
    with pytest.raises(InputError, match="LoRA adapter not found"):
        merged_target(settings.model_copy(update={"adapter": workdir / "none.safetensors"}), "one")


def test_the_rate_is_constant_then_falls_linearly_to_zero_over_the_decay_steps(workdir, tiny_random_pair):
    settings = _settings(tiny_random_pair.target_path, workdir, "wsd", steps=10, decay_steps=4)
    rates = [learning_rate_at(step, settings) for step in range(10)]
    assert rates[:6] == [0.01] * 6
    assert rates[6:] == pytest.approx([0.008, 0.006, 0.004, 0.002])
    with pytest.raises(ValueError, match="decay_steps"):
        _settings(tiny_random_pair.target_path, workdir, "bad", steps=2, decay_steps=3)


def test_a_run_without_its_checkpoint_restarts_from_the_committed_adapter(workdir, tiny_random_pair):
    settings = _settings(tiny_random_pair.target_path, workdir, "restart")
    train_target_adapter(settings.model_copy(update={"steps": 2}), chat_template=False)
    checkpoint_path(settings.adapter).unlink()  # only the adapter and its curve are committed
    longer = settings.model_copy(update={"steps": 4, "decay_steps": 2})
    summary = train_target_adapter(longer, chat_template=False)
    assert summary["restarts"] == [2] and summary["steps"] == 4
    assert [point["step"] for point in summary["curve"]] == [0, 2, 4]
    assert summary["schedule"] == {"learning_rate": 0.01, "decay_steps": 2}
    assert read_adapter(settings.adapter)[2] == 4
