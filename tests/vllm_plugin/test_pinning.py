"""One head per engine: pinning resolves an alias once, to an immutable file and its hash (real MLflow store)."""

from __future__ import annotations

import pytest
import torch

from autojudge.errors import InputError
from autojudge.features.spec import FeatureSpec
from autojudge.heads.artifact import JudgeHead, load_head
from autojudge.registry.promotion import register_version
from autojudge.registry.runs import log_model_and_card, log_training_run
from autojudge.vllm_plugin.pinning import check_pinned, file_sha256, pin_head

NAME = "autojudge-arith-pin-test"


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("AUTOJUDGE_HEAD_CACHE", str(tmp_path / "pinned"))
    return tmp_path


def _register(directory, threshold):
    head = JudgeHead(torch.ones(3), 0.0, threshold, FeatureSpec("target", 3, 2), "toy", "arith", "h")
    path = head.save(directory / f"head-{threshold}" / "head.safetensors")
    run_id = log_training_run(NAME, {}, {}, [path])
    uri = log_model_and_card(run_id, path, {}, "# card\n", {}, [])
    return register_version(uri, NAME, "# card\n", {}, "candidate"), path


def test_an_alias_is_pinned_to_its_version_and_moving_it_changes_nothing_pinned(store):
    first, first_file = _register(store, 0.1)
    pinned = pin_head(f"models:/{NAME}@candidate")
    assert pinned.sha256 == file_sha256(first_file)
    assert pinned.source == f"models:/{NAME}@candidate = models:/{NAME}/{first}"
    assert pinned.path.parent.name == pinned.sha256 and pinned.path.parent.parent == store / "pinned"

    _, second_file = _register(store, 0.2)  # moves the alias
    assert file_sha256(pinned.path) == pinned.sha256
    assert load_head(pinned.path).threshold == 0.1
    check_pinned(str(pinned.path), pinned.sha256)
    repinned = pin_head(f"models:/{NAME}@candidate")
    assert repinned.sha256 == file_sha256(second_file) != pinned.sha256
    assert pin_head(f"models:/{NAME}/{first}").sha256 == pinned.sha256


def test_a_changed_file_or_an_unknown_alias_is_refused(store):
    _, path = _register(store, 0.1)
    pinned = pin_head(str(path))
    pinned.path.write_bytes(path.read_bytes() + b" ")
    with pytest.raises(InputError, match="the engine pinned"):
        check_pinned(str(pinned.path), pinned.sha256)
    with pytest.raises(InputError, match=f"cannot resolve models:/{NAME}@nowhere"):
        pin_head(f"models:/{NAME}@nowhere")
    with pytest.raises(InputError, match="judge head not found"):
        pin_head(str(store / "missing.safetensors"))
