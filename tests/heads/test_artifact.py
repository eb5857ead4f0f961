import pytest
import torch

from autojudge.errors import InputError, ModelPairError
from autojudge.features.spec import FeatureSpec
from autojudge.heads.artifact import JudgeHead, load_head


def _head(source="both"):
    spec = FeatureSpec(source, target_hidden_size=4, draft_hidden_size=2)
    return JudgeHead(
        torch.arange(spec.dimension, dtype=torch.float32),
        -1.5,
        0.25,
        spec,
        "toy",
        "arith",
        "abc",
        {"best_c": 0.01},
    )


def test_round_trip(tmp_path):
    path = _head().save(tmp_path)
    loaded = load_head(path)
    assert path.name == "head.safetensors"
    assert torch.equal(loaded.weight, torch.arange(6, dtype=torch.float32))
    assert (loaded.bias, loaded.threshold, loaded.pair, loaded.task) == (-1.5, 0.25, "toy", "arith")
    assert loaded.features == FeatureSpec("both", 4, 2)
    assert loaded.info == {"best_c": 0.01}
    assert load_head(tmp_path).threshold == 0.25  # a directory holding head.safetensors


def test_probability_is_logistic_of_the_dot_product():
    head = _head("target")
    features = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    expected = torch.sigmoid(torch.tensor([0.0 - 1.5, 3.0 - 1.5]))
    assert torch.allclose(head.probability(features), expected)


def test_wrong_models_are_refused_by_name():
    head = _head()
    head.check_models("toy", "abc", 4, 2)
    with pytest.raises(
        ModelPairError, match="expects hidden sizes target=4, draft=2; pair 'big' has target=8"
    ):
        head.check_models("big", "abc", 8, 2)
    with pytest.raises(ModelPairError, match="another tokenizer"):
        head.check_models("toy", "zzz", 4, 2)


def test_bad_files_are_named(tmp_path):
    with pytest.raises(InputError, match="judge head not found"):
        load_head(tmp_path / "nope.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"not a head")
    with pytest.raises(InputError, match=r"junk\.safetensors: not an autojudge head"):
        load_head(tmp_path / "junk.safetensors")


def test_a_context_head_keeps_its_groups_and_token_classes(tmp_path):
    spec = FeatureSpec("target", 4, 2, ("context_state", "token_classes"))
    classes = torch.tensor([0, 1, 3, 2], dtype=torch.int8)
    head = JudgeHead(torch.ones(spec.dimension), 0.0, 0.5, spec, "toy", "arith", "abc", token_class=classes)
    loaded = load_head(head.save(tmp_path))
    assert loaded.features == spec and torch.equal(loaded.token_class, classes)
    loaded.check_models("toy", "abc", 4, None)  # reads target states only: any proposer
    with pytest.raises(InputError, match="reads token classes but holds no class table"):
        JudgeHead(torch.ones(spec.dimension), 0.0, 0.5, spec, "toy", "arith", "abc")


def test_a_head_moved_to_a_device_takes_its_class_table_along():
    """The engine's runner moves a head once; a step must never copy the class table from the host."""
    spec = FeatureSpec("target", 4, 2, ("token_state", "token_classes"))
    classes = torch.tensor([0, 1, 3, 2], dtype=torch.int8)
    head = JudgeHead(torch.ones(spec.dimension, dtype=torch.float64), 0.0, 0.5, spec, "toy", "arith", "abc",
                     token_class=classes)  # fmt: skip
    moved = head.to("meta")
    assert moved.weight.device.type == moved.token_class.device.type == "meta"
    assert moved.weight.dtype == torch.float32 and moved.token_class.dtype == torch.int8
    assert head.weight.device.type == head.token_class.device.type == "cpu"  # the loaded head is untouched


def test_a_head_naming_an_unknown_feature_group_is_refused_by_file(tmp_path):
    path = _head("target").save(tmp_path)
    metadata = {
        **_head("target").metadata(),
        "features": {**_head("target").metadata()["features"], "groups": ["logits"]},
    }
    import json

    from safetensors.torch import load_file, save_file

    save_file(load_file(str(path)), str(path), metadata={"autojudge": json.dumps(metadata)})
    with pytest.raises(InputError, match=r"head\.safetensors: feature groups \['logits'\]"):
        load_head(path)
