"""EAGLE heads on the committed toy target: trained into their head directory (responses kept, resumed, read
back), and installed by stage eagle only for the entry and target that made them."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

from autojudge.errors import InputError
from autojudge.models import distilled_draft, eagle_training
from autojudge.models.distilled_draft import responses_path
from autojudge.models.eagle import agreement, load_head
from autojudge.models.eagle_stage import RECORD, install_eagle, response_examples, train_eagle, training_dir
from autojudge.models.pair import load_causal_lm
from autojudge.models.prompts import encode_prompt
from autojudge.models.tokenizer import load_tokenizer
from autojudge.params import EagleParams, VllmParams
from autojudge.tasks import get_task


@pytest.fixture
def workdir(tmp_path, monkeypatch, arith_dir, repo, params):
    """A project directory holding data/arith (the stage reads data/<task>), where the target's responses
    are written instead of generated (no engine on these cores): each problem's reference solution."""
    shutil.copytree(arith_dir, tmp_path / "data" / "arith")
    monkeypatch.chdir(tmp_path)
    task = get_task("arith", tmp_path / "data" / "arith")
    tokenizer = load_tokenizer(repo / params.pair.target)
    solutions = {
        tuple(encode_prompt(tokenizer, task.build_prompt(example), False)): example.solution
        for split in ("train", "validation")
        for example in task.load_split(split, 30)
    }

    def written(settings, vllm, target, tokenizer, prompts):
        encoded = [tokenizer.encode(" " + solutions[tuple(p)], add_special_tokens=False) for p in prompts]
        return [[*tokens[: settings.max_response_tokens - 1], tokenizer.eos_token_id] for tokens in encoded]

    monkeypatch.setattr(distilled_draft, "_generate", written)
    return tmp_path


def _settings(repo, params, head, **changes) -> EagleParams:
    values = dict(
        target=repo / params.pair.target, head=head, out=head.with_name("installed"), problems=24, eval_problems=6, max_response_tokens=24,
        engine="hf", steps=12, batch_size=6, learning_rate=3e-3, eval_every=4, checkpoint_every=4, patience=5,
    )  # fmt: skip
    return EagleParams(**{**values, **changes})


def _build(settings: EagleParams) -> dict:
    return train_eagle(settings, False, VllmParams(), "toy")


def test_the_head_is_trained_on_the_targets_responses_and_saved_beside_its_training_state(
    workdir, repo, params
):
    settings = _settings(repo, params, workdir / "models" / "eagle")
    summary = _build(settings)
    assert sorted(p.name for p in (workdir / "models").iterdir()) == [
        "eagle", "eagle.responses.json", "eagle.training",
    ]  # fmt: skip
    assert sorted(p.name for p in settings.head.iterdir()) == ["config.json", "model.safetensors", RECORD]
    assert sorted(p.name for p in training_dir(settings.head).iterdir()) == ["checkpoint.pt", "curve.json"]
    assert json.loads((settings.head / RECORD).read_text()) == summary
    kept = json.loads(responses_path(settings.head).read_text())
    assert len(kept["train"]) == 24 and len(kept["evaluation"]) == 6
    assert kept["made_by"]["splits"]["evaluation"] == ["validation", 6]  # early stopping reads validation

    assert summary["steps"] == 12 and summary["resumed_from_step"] == 0 and summary["stopped"] == "max_steps"
    assert list(summary["agreement_curve"]) == ["0", "4", "8", "12"]
    assert summary["held_out_agreement"] > summary["agreement_before_training"]
    assert summary["held_out_agreement"] == round(max(summary["agreement_curve"].values()), 4)
    weights = load_file(settings.head / "model.safetensors")
    assert summary["parameters"] == sum(t.numel() for t in weights.values())
    assert summary["head_bytes"] > 4 * summary["parameters"]  # float32 weights and the config
    assert summary["train_responses"] == 24 and summary["held_out_positions"] > 0

    target = load_causal_lm(settings.target, torch.float32, role="target")
    held_out = response_examples(target, [tuple(row) for row in kept["evaluation"]], 8)
    head = load_head(settings.head, target)
    assert round(agreement(head, held_out), 4) == summary["held_out_agreement"]

    figures = install_eagle(settings, "toy")  # stage eagle: the same head where vLLM loads it, in seconds
    assert figures == {k: v for k, v in summary.items() if k != "made_by"}
    assert sorted(p.name for p in settings.out.iterdir()) == ["config.json", "model.safetensors"]
    assert (settings.out / "model.safetensors").read_bytes() == (
        settings.head / "model.safetensors"
    ).read_bytes()
    with pytest.raises(
        InputError, match=r"eagle\.toy: the head in \S+ was trained with other learning_rate than"
    ):
        install_eagle(settings.model_copy(update={"learning_rate": 1e-3}), "toy")
    other_target = settings.model_copy(update={"target": repo / params.pair.draft})
    with pytest.raises(
        InputError, match=r"with other target than this entry and its target give: `autojudge eagle"
    ):
        install_eagle(other_target, "toy")
    with pytest.raises(
        InputError, match=r"eagle\.toy: \S+ holds no trained head .* `autojudge eagle train --name toy`"
    ):
        install_eagle(settings.model_copy(update={"head": workdir / "none"}), "toy")


def test_an_interrupted_training_resumes_from_its_state_and_a_finished_one_is_read_back(
    workdir, repo, params, monkeypatch, capsys
):
    """The command's layout around the training loop (that a resumed run ends as an uninterrupted one is
    ``test_eagle.py``'s): the checkpoint beside the head, no head before the end, a finished run read back."""
    calls = []
    real_loss = eagle_training._loss

    def killed_at_step_7(*args):
        calls.append(1)
        if len(calls) == 7:
            raise KeyboardInterrupt
        return real_loss(*args)

    interrupted = _settings(repo, params, workdir / "b" / "eagle")
    monkeypatch.setattr(eagle_training, "_loss", killed_at_step_7)
    with pytest.raises(KeyboardInterrupt):
        _build(interrupted)
    monkeypatch.setattr(eagle_training, "_loss", real_loss)
    assert not interrupted.head.exists()  # no head until the run ends
    resumed = _build(interrupted)
    assert "checkpoint.pt at step 4\n" in capsys.readouterr().out
    assert resumed["resumed_from_step"] == 4 and resumed["steps"] == 12
    assert (interrupted.head / "model.safetensors").is_file()

    again = _build(interrupted)  # finished: read back, nothing trained
    assert again["resumed_from_step"] == 12 and again["seconds_per_step"] is None
    out = capsys.readouterr().out
    assert "responses read back" in out and "at step 12, finished (max_steps): read back" in out
    with pytest.raises(InputError, match=r"checkpoint\.pt was written by a run with other settings"):
        _build(interrupted.model_copy(update={"learning_rate": 1e-3}))
