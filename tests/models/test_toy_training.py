"""Training the toy pair on a mixed corpus, at a size that takes seconds."""

import json

from autojudge.models.pair import load_pair
from autojudge.models.toy_training import train_toy_pair
from autojudge.params import ToyModelParams, load_params

TINY = {"hidden_size": 32, "layers": 1, "heads": 1, "intermediate_size": 64, "steps": 4, "batch_size": 4}


def test_mixed_pair_trains_saves_and_probes_every_source(tmp_path):
    toy = load_params("params.yaml").toy.model_copy(
        update={
            "mixture": {"arith": 1.0, "arith_variant": 1.0, "pyfunc": 1.0},
            "code_splits": {"train": 10, "validation": 6, "test": 6},
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
