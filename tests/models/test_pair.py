import pytest

from autojudge.errors import InputError, ModelPairError
from autojudge.models.pair import load_pair
from autojudge.params import ToyModelParams
from autojudge.world.tokenizer import train_toy_tokenizer
from autojudge.world.training import build_model, save_model

SPEC = ToyModelParams(
    hidden_size=32, layers=1, heads=1, intermediate_size=64, steps=1, batch_size=1, learning_rate=1e-3
)


def _save(tokenizer, directory):
    save_model(build_model(SPEC, tokenizer, seed=0), tokenizer, directory)
    return directory


def test_pair_with_different_vocabularies_is_refused_naming_both(tmp_path, tiny_tokenizer):
    other = train_toy_tokenizer(["completely different words here"] * 20, 300)
    draft, target = _save(other, tmp_path / "draft-x"), _save(tiny_tokenizer, tmp_path / "target-y")
    with pytest.raises(
        ModelPairError, match=r"draft .*draft-x and target .*target-y have different vocabularies"
    ):
        load_pair("bad", draft, target)


def test_pair_with_different_special_tokens_is_refused(tmp_path, tiny_tokenizer):
    target = _save(tiny_tokenizer, tmp_path / "target")
    draft = _save(tiny_tokenizer, tmp_path / "draft")
    config = (draft / "tokenizer_config.json").read_text()
    (draft / "tokenizer_config.json").write_text(config.replace('"<|eos|>"', '"<|pad|>"', 1))
    with pytest.raises(ModelPairError, match="different special tokens"):
        load_pair("bad", draft, target)


def test_missing_model_path_is_named(tmp_path, tiny_tokenizer):
    target = _save(tiny_tokenizer, tmp_path / "target")
    with pytest.raises(InputError, match=r"draft model not found: .*no-such-draft"):
        load_pair("bad", tmp_path / "no-such-draft", target)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"target model directory has no config\.json: .*empty"):
        load_pair("bad", target, tmp_path / "empty")


def test_valid_pair_loads_in_eval_mode(tiny_random_pair):
    assert not tiny_random_pair.draft.training and not tiny_random_pair.target.training
    assert tiny_random_pair.vocab_size == len(tiny_random_pair.tokenizer)
    assert tiny_random_pair.tokenizer.eos_token_id in tiny_random_pair.eos_token_ids
