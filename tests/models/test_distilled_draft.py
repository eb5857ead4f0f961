"""Stage distill's work on a tiny random Llama: responses kept and read back, the draft saved, the bar enforced."""

import json
import shutil
import subprocess
import sys

import pytest

from autojudge.errors import InputError
from autojudge.models.distilled_draft import build_draft, responses_path
from autojudge.models.pair import load_pair
from autojudge.params import DistillParams, VllmParams


@pytest.fixture
def workdir(tmp_path, monkeypatch, arith_dir):
    """A project directory holding data/arith (the stage reads data/<task>)."""
    shutil.copytree(arith_dir, tmp_path / "data" / "arith")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _settings(target, out, **changes) -> DistillParams:
    values = dict(
        target=target, out=out, problems=6, eval_problems=3, max_response_tokens=10, engine="hf",
        layers=1, steps=8, batch_size=3, learning_rate=0.003,
    )  # fmt: skip
    return DistillParams(**{**values, **changes})


def test_the_draft_is_saved_with_the_targets_tokenizer_and_the_responses_are_read_back(
    workdir, tiny_random_pair, capsys
):
    settings = _settings(tiny_random_pair.target_path, workdir / "draft")
    summary = build_draft(settings, False, VllmParams(), "tiny")
    pair = load_pair("tiny", workdir / "draft", tiny_random_pair.target_path)  # same tokenizer, or refused
    assert pair.draft.config.num_hidden_layers == summary["layers"] == 1
    assert summary["train_responses"] == 6 and summary["trained_parameters"] < summary["parameters"]
    kept = json.loads(responses_path(workdir / "draft").read_text())
    assert len(kept["train"]) == 6 and len(kept["evaluation"]) == 3

    retrained = build_draft(settings.model_copy(update={"steps": 4}), False, VllmParams(), "tiny")
    assert "read back" in capsys.readouterr().out
    assert retrained["train_tokens"] == summary["train_tokens"]
    fewer = settings.model_copy(update={"problems": 4})
    assert build_draft(fewer, False, VllmParams(), "tiny")["train_responses"] == 4  # generated anew


def test_a_draft_below_the_agreement_bar_stops_the_stage_naming_the_entry(workdir, tiny_random_pair):
    settings = _settings(tiny_random_pair.target_path, workdir / "draft", steps=1, min_agreement=1.0)
    with pytest.raises(
        InputError, match=r"distill\.tiny: teacher-forced agreement .* below min_agreement 1\.0"
    ):
        build_draft(settings, False, VllmParams(), "tiny")
    assert not (workdir / "draft").exists()


def test_the_stage_names_a_missing_entry_of_params_distill(repo):
    done = subprocess.run(
        [sys.executable, str(repo / "stages" / "distill.py"), "--name", "nope", "--metrics", "unused.json"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert "stage distill: params distill has no entry 'nope' (has [])" in done.stderr
