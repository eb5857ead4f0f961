"""Pair presets: each validates against the params schema offline, and applying one rewrites params.yaml."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from autojudge.errors import InputError
from autojudge.models.runtime import pair_from, task_from
from autojudge.orchestration.presets import apply_preset, available_presets, merged_params, overlay

REAL_PRESETS = ["gsm8k-llama", "gsm8k-qwen", "livecodebench-llama"]


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


def test_the_eagle_preset_is_the_fine_tuned_one_with_a_head_for_its_target(project):
    """smollm2-eagle adds stage eagle to smollm2-arith and changes nothing else (its pair still drafts with
    the distilled draft: the header says what the pipeline lacks to draft with the head)."""
    raw, params = merged_params(project, "smollm2-eagle")
    fine_tuned, _ = merged_params(project, "smollm2-arith")
    raw.pop("eagle"), fine_tuned.pop("eagle")
    assert raw == fine_tuned
    ((name, eagle),) = params.eagle.items()
    assert name == "smollm2-arith" and eagle.target == params.pair.target == params.finetune[name].out
    assert eagle.out not in (params.pair.draft, params.pair.target) and eagle.task == params.task.name
    assert eagle.eval_split == "validation" and eagle.max_response_tokens <= params.mining.vllm.max_model_len
    assert eagle.patience * eagle.eval_every < eagle.steps  # early stopping can end it before the cap


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
    assert {k: v for k, v in raw["train"].items() if k not in ("protocol", "out_of_fold_folds")} == toy_train
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


def test_apply_preset_rewrites_params_and_toy_changes_nothing(project):
    original = (project / "params.yaml").read_text()
    apply_preset(project, "toy")
    assert (project / "params.yaml").read_text() == original
    apply_preset(project, "gsm8k-qwen")
    _, params = merged_params(project, "toy")
    assert params.pair.name == "qwen2.5-0.5b-qwen2.5-7b"


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
