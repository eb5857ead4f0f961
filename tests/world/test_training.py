"""Training the toy pair on a mixed corpus, at a size that takes seconds."""

import json

from autojudge.models.pair import load_pair
from autojudge.params import ToyModelParams, load_params
from autojudge.world.quality import measure_sources
from autojudge.world.training import train_toy_pair

TINY = {"hidden_size": 32, "layers": 1, "heads": 1, "intermediate_size": 64, "steps": 4, "batch_size": 4}


def test_mixed_pair_trains_saves_and_probes_every_source(tmp_path):
    toy = load_params("params.yaml").toy.model_copy(
        update={
            "mixture": {"arith": 1.0, "arith_variant": 1.0, "pyfunc": 1.0},
            "code_splits": {"train": 10, "validation": 6, "test": 6},
            "splits": {"train": 10, "validation": 4, "test": 3, "variant": 3, "variant_validation": 4},
            "tokenizer_vocab_size": 320,
            "tokenizer_corpus": 300,
            "probe_problems": 2,
            "probe_every": 2,
            "target": ToyModelParams(**TINY, learning_rate=0.01, warmup_steps=1),
            "draft": ToyModelParams(**TINY, learning_rate=0.01, warmup_steps=1),
        }
    )
    histories = train_toy_pair(toy, tmp_path)
    for role in ("target", "draft"):
        assert [h["step"] for h in histories[role]] == [2, 4]
        assert set(histories[role][-1]["probe_accuracy"]) == {"arith", "arith_variant", "pyfunc"}
        json.dumps(histories[role])  # the history goes into training.json
    pair = load_pair("tiny", tmp_path / "draft", tmp_path / "target", "float32")
    # one shared tokenizer that has seen code: indentation and Python keywords encode compactly
    assert len(pair.tokenizer.encode("    return x", add_special_tokens=False)) < len("    return x")
    # `autojudge toy measure`: every source's test split, with its bound checks
    figures = measure_sources(pair, toy, max_new_tokens=8)
    assert {s: (f["split"], f["examples"]) for s, f in figures.items()} == {
        "arith": ("test", 3),
        "arith_variant": ("variant", 3),
        "pyfunc": ("test", 6),
    }
    assert all(not f["within_bounds"] and f["failures"] for f in figures.values())  # 4 steps: untrained


def test_draft_alone_reuses_the_target_tokenizer_and_its_own_mixture(tmp_path):
    """`toy train --only draft`: the target stays, the draft trains on its own corpus with the same tokenizer."""
    toy = load_params("params.yaml").toy.model_copy(
        update={
            "tokenizer_vocab_size": 320,
            "tokenizer_corpus": 300,
            "probe_problems": 2,
            "probe_every": 2,
            "target": ToyModelParams(**TINY, learning_rate=0.01, warmup_steps=1),
        }
    )
    train_toy_pair(toy, tmp_path, ("target",))
    target_weights = (tmp_path / "target" / "model.safetensors").read_bytes()
    draft = ToyModelParams(**TINY, learning_rate=0.01, warmup_steps=1, mixture={"arith_variant": 1.0})
    histories = train_toy_pair(toy.model_copy(update={"draft": draft}), tmp_path, ("draft",))
    assert set(histories) == {"draft"}
    assert (tmp_path / "target" / "model.safetensors").read_bytes() == target_weights
    pair = load_pair("tiny", tmp_path / "draft", tmp_path / "target", "float32")  # checks one tokenizer
    assert pair.draft.config.vocab_size == pair.target.config.vocab_size
