"""Pair presets: each validates against the params schema offline; applying one makes params.yaml a view of
the user's own file with the preset merged in, which DVC and the stages read, and `toy` puts the file back."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from dvc.dependency.param import ParamsDependency
from dvc.repo import Repo
from dvc.stage import Stage

from autojudge.errors import InputError
from autojudge.models.eagle_stage import RECORD, trained_with
from autojudge.models.runtime import pair_from, task_from
from autojudge.orchestration.dvc_stages import tool_env
from autojudge.orchestration.presets import (
    active_preset,
    apply_preset,
    available_presets,
    merged_params,
    overlay,
)
from autojudge.params import load_params, validate_params

REAL_PRESETS = ["gsm8k-llama", "gsm8k-qwen", "livecodebench-llama"]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(repo, tmp_path):
    shutil.copy(repo / "params.yaml", tmp_path / "params.yaml")
    shutil.copytree(repo / "presets", tmp_path / "presets")
    return tmp_path


def test_overlay_merges_mappings_and_drops_nulls():
    base = {"a": {"x": 1, "y": 2}, "b": 3, "c": {"z": 1}}
    assert overlay(base, {"a": {"y": 5, "w": 6}, "b": None, "c": 7}) == {
        "a": {"x": 1, "y": 5, "w": 6},
        "c": 7,
    }
    assert base == {"a": {"x": 1, "y": 2}, "b": 3, "c": {"z": 1}}


def test_the_documented_presets_exist(repo):
    assert available_presets(repo) == sorted(
        ["toy", "toy-arith", "smollm2-cpu", "smollm2-arith", "smollm2-eagle", *REAL_PRESETS]
    )


def test_the_fine_tuned_preset_chains_convert_finetune_and_distill(project):
    _, params = merged_params(project, "smollm2-arith")
    (convert,), (finetune,), (distill,) = (
        params.convert.values(),
        params.finetune.values(),
        params.distill.values(),
    )
    assert finetune.base == convert.out and params.pair.target == finetune.out == distill.target
    assert params.pair.draft == distill.out and distill.min_agreement >= 0.65  # the bar of a draft
    assert "unseen" in finetune.eval_splits and "arith:unseen" in params.crossdomain.domains
    assert params.compare.limit >= 200 and params.decoding.engine == "vllm"


def test_the_eagle_preset_is_the_fine_tuned_one_drafting_with_a_head_for_its_target(project, repo):
    """smollm2-eagle is smollm2-arith with stage eagle instead of distill, its pair drafting with that stage's
    head (the committed one, made with the entry's settings); nothing else changes."""
    raw, params = merged_params(project, "smollm2-eagle")
    fine_tuned, _ = merged_params(project, "smollm2-arith")
    raw.pop("eagle"), fine_tuned.pop("eagle"), fine_tuned.pop("distill")
    assert raw.pop("distill") == {}  # no draft model to distil
    pair, fine_tuned_pair = raw.pop("pair"), fine_tuned.pop("pair")
    assert raw == fine_tuned
    drafting = ("name", "proposer", "draft")
    assert {k: v for k, v in pair.items() if k not in drafting} == {
        k: v for k, v in fine_tuned_pair.items() if k not in drafting
    }
    ((name, eagle),) = params.eagle.items()
    assert name == "smollm2-arith" and eagle.target == params.pair.target == params.finetune[name].out
    assert (params.pair.proposer, params.pair.draft) == (
        "eagle",
        eagle.out,
    ) and eagle.task == params.task.name
    assert pair["name"] != fine_tuned_pair["name"]  # its heads are registered under their own names
    assert eagle.eval_split == "validation" and eagle.max_response_tokens <= params.mining.vllm.max_model_len
    assert eagle.patience * eagle.eval_every < eagle.steps  # early stopping can end it before the cap
    record = json.loads((repo / eagle.head / RECORD).read_text())["made_by"]  # stage eagle checks it whole
    assert {k: v for k, v in record.items() if k != "target"} == trained_with(eagle)


@pytest.mark.parametrize("name", REAL_PRESETS)
def test_real_presets_validate_without_downloading(project, name):
    raw, params = merged_params(project, name)
    assert params.task.name in ("gsm8k", "livecodebench") and params.toy is None
    assert list(params.tasks) == [params.task.name]  # one pipeline task: neither arith nor pyfunc
    assert params.pair.device == "cuda" and params.pair.dtype == "bfloat16" and params.pair.chat_template
    assert params.features.dtype == "float32"  # appendix C
    engine_kwargs = params.mining.vllm.engine_kwargs
    assert "kv_cache_memory_bytes" not in engine_kwargs and 0 < engine_kwargs["gpu_memory_utilization"] < 1
    assert params.mining.max_response_tokens <= params.mining.vllm.max_model_len
    assert params.pair.draft != params.pair.target
    # The toy settings of everything the preset leaves alone are kept.
    toy_train = yaml.safe_load((project / "params.yaml").read_text())["train"]
    protocol = ("protocol", "out_of_fold_folds")  # the preset's own
    assert {k: v for k, v in raw["train"].items() if k not in protocol} == {
        k: v for k, v in toy_train.items() if k not in protocol
    }
    # Nothing is downloaded: a worker without the weights or data gets a clear error naming them.
    with pytest.raises(InputError, match="model not found: models/"):
        pair_from(params)
    with pytest.raises(InputError, match=params.task.name):
        task_from(params).load_split("test")


def test_livecodebench_is_evaluated_out_of_fold_on_its_only_split(project):
    """No training split: the head is mined on the evaluated split and each problem decoded out of fold."""
    _, params = merged_params(project, "livecodebench-llama")
    assert params.train.protocol == "out_of_fold" and params.train.out_of_fold_folds == 5
    assert params.mining.split == params.evaluate.split == params.bench.split == "test"
    assert params.compare.splits == ["test"]
    assert params.mining.max_response_tokens <= params.mining.vllm.max_model_len


def edit_own_params(project: Path) -> bytes:
    """A user's own edit and comment in params.yaml (a key no preset sets); the file's new bytes."""
    path = project / "params.yaml"
    text = path.read_text().replace("  folds: 5\n", "  folds: 7                    # my own: seven folds\n")
    path.write_text(text + "# my closing note\n")
    return path.read_bytes()


def test_a_preset_keeps_the_users_file_and_toy_puts_it_back_byte_for_byte(project):
    own = edit_own_params(project)
    apply_preset(project, "gsm8k-qwen")
    view = (project / "params.yaml").read_text()
    assert view.startswith("# Generated by `autojudge preset gsm8k-qwen`")
    assert "# my own: seven folds" in view and "# my closing note" in view  # comments kept in the view
    assert "# Parameters of every stage and command." in view
    params = load_params(project / "params.yaml")
    assert params.pair.name == "qwen2.5-0.5b-qwen2.5-7b" and params.train.folds == 7  # the user's edit too
    assert (project / ".preset" / "params.yaml").read_bytes() == own
    assert active_preset(project) == "gsm8k-qwen"
    apply_preset(project, "toy")
    assert (project / "params.yaml").read_bytes() == own and not (project / ".preset").exists()
    assert active_preset(project) is None
    apply_preset(project, "toy")  # no preset: nothing to undo, nothing written
    assert (project / "params.yaml").read_bytes() == own


def test_presets_do_not_stack(project, tmp_path_factory):
    apply_preset(project, "smollm2-cpu")
    apply_preset(project, "gsm8k-llama")
    alone = tmp_path_factory.mktemp("alone")
    shutil.copy(project / ".preset" / "params.yaml", alone / "params.yaml")
    shutil.copytree(project / "presets", alone / "presets")
    apply_preset(alone, "gsm8k-llama")
    assert (project / "params.yaml").read_bytes() == (alone / "params.yaml").read_bytes()
    params = load_params(project / "params.yaml")
    assert params.convert == {} and params.distill == {}  # nothing left of smollm2-cpu


@pytest.mark.parametrize("name", sorted(set(available_presets(REPO)) - {"toy"}))
def test_stages_load_the_preset_merged_over_the_users_params(project, name):
    """What a stage loads (``--params params.yaml``, per pipeline task) is the preset over the user's file."""
    own = yaml.safe_load((project / "params.yaml").read_text())
    apply_preset(project, name)
    preset = yaml.safe_load((project / "presets" / f"{name}.yaml").read_text())
    assert yaml.safe_load((project / "params.yaml").read_text()) == overlay(own, preset)
    params = load_params(project / "params.yaml")
    assert params == validate_params(overlay(own, preset), name) == merged_params(project, name)[1]
    for task in params.tasks:
        assert load_params(project / "params.yaml", task) == params.for_task(task)


def dvc_stages(project: Path) -> dict[str, Stage]:
    """The stages of ``project``'s dvc.yaml as DVC expands them, by name."""
    with Repo(str(project)) as dvc:
        return {stage.name: stage for stage in dvc.index.stages}


def test_dvc_expands_and_tracks_the_active_preset(project, repo):
    """dvc.yaml's templating and the stages' params dependencies see the preset while it is active."""
    shutil.copy(repo / "dvc.yaml", project / "dvc.yaml")
    subprocess.run(["dvc", "init", "--no-scm", "-q"], cwd=project, env=tool_env(), check=True)
    apply_preset(project, "gsm8k-llama")
    stages = dvc_stages(project)
    assert {"prepare@gsm8k", "mine@gsm8k-7", "relabel"} <= set(stages) and "prepare@arith" not in stages
    assert "--task gsm8k" in stages["relabel"].cmd
    (tracked,) = [dep for dep in stages["train@gsm8k"].deps if isinstance(dep, ParamsDependency)]
    assert tracked.read_params()["decoding"]["window"] == 16  # the preset's, not the user's 32
    apply_preset(project, "toy")
    stages = dvc_stages(project)
    assert {"prepare@arith", "prepare@pyfunc"} <= set(stages) and "prepare@gsm8k" not in stages


def test_a_hand_edited_preset_view_is_kept_unless_forced(project):
    own = (project / "params.yaml").read_bytes()
    apply_preset(project, "smollm2-cpu")
    view = project / "params.yaml"
    view.write_text(view.read_text().replace("window: 8", "window: 4"))
    with pytest.raises(InputError, match=r"params\.yaml was edited while preset 'smollm2-cpu' was active"):
        apply_preset(project, "toy")
    assert "window: 4" in view.read_text()
    apply_preset(project, "toy", force=True)
    assert view.read_bytes() == own


def test_an_unknown_preset_stops_with_one_line(project):
    own = (project / "params.yaml").read_bytes()
    command = [sys.executable, "-m", "autojudge", "preset", "llama-70b", "--root", str(project)]
    result = subprocess.run(command, capture_output=True, text=True, env=tool_env())
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: unknown preset 'llama-70b'") and result.stderr.count("\n") == 1
    assert (project / "params.yaml").read_bytes() == own and not (project / ".preset").exists()


def test_unknown_or_broken_presets_are_named(project):
    with pytest.raises(InputError, match=r"unknown preset 'llama-70b'.*available: \['gsm8k-llama'"):
        apply_preset(project, "llama-70b")
    (project / "presets" / "broken.yaml").write_text("decoding: {window: 0}\n")
    with pytest.raises(InputError, match=r"broken\.yaml: invalid parameters: decoding\.window"):
        apply_preset(project, "broken")
    assert "window: 0" not in (project / "params.yaml").read_text()


def test_default_params_run_both_domains_on_the_committed_two_domain_pair(repo):
    """The default toy world has three sources whose every test split exists, on the committed pair."""
    _, params = merged_params(repo, "toy")
    assert set(params.toy.mixture) == {"arith", "arith_variant", "pyfunc"}
    assert {"test", "variant", "variant_validation"} <= set(params.toy.splits)
    assert params.toy.draft.mixture["pyfunc"] < params.toy.mixture["pyfunc"]  # the draft reads less code
    assert list(params.tasks) == ["arith", "pyfunc"]
    for role in ("draft", "target"):
        assert (repo / getattr(params.pair, role) / "model.safetensors").exists()


def test_toy_arith_preset_is_the_first_pair_on_arith_alone(repo):
    _, params = merged_params(repo, "toy-arith")
    assert params.pair.target == Path("models/toy/target") and list(params.tasks) == ["arith"]
    assert set(params.toy.mixture) == {"arith"} and params.toy.draft.mixture is None
    assert "variant" not in params.toy.splits
    assert all(domain.startswith("arith:") for domain in params.crossdomain.domains)


def test_smollm2_preset_builds_its_pair_in_the_pipeline(repo):
    """The CPU preset of a real pair: the target converted and the draft distilled by stages, chat template on."""
    _, params = merged_params(repo, "smollm2-cpu")
    (convert,), (distill,) = params.convert.values(), params.distill.values()
    assert convert.out == params.pair.target == distill.target and distill.out == params.pair.draft
    assert distill.task == params.task.name == "arith" and list(params.tasks) == ["arith"]
    assert params.pair.chat_template and params.pair.device == "cpu" and distill.min_agreement >= 0.6
    assert params.mining.max_response_tokens <= params.mining.vllm.max_model_len
    assert distill.max_response_tokens <= params.mining.vllm.max_model_len
    assert params.toy is not None  # its prompts are the toy arith splits (stage prepare)
