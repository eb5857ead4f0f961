"""A pair that drafts with an EAGLE head (``pair.proposer: eagle``): loaded, guessing, and kept off the
reference engine."""

import pytest

from autojudge.decoding.batched import BatchedDecoder
from autojudge.errors import InputError
from autojudge.models.eagle import EagleHead
from autojudge.models.eagle_predictor import EaglePredictor
from autojudge.models.pair import load_pair
from autojudge.models.runtime import predictor_from
from autojudge.models.teacher_forced import DraftPredictor


@pytest.fixture(scope="module")
def eagle_pair(repo, params, toy_eagle_head):
    return load_pair("toy-eagle", toy_eagle_head, repo / params.pair.target, proposer="eagle")


def test_an_eagle_pair_drafts_with_its_head_on_the_targets_tokenizer(eagle_pair, toy_pair):
    assert isinstance(eagle_pair.draft, EagleHead) and eagle_pair.proposer == "eagle"
    assert eagle_pair.tokenizer.get_vocab() == toy_pair.tokenizer.get_vocab()
    assert eagle_pair.vocab_size == toy_pair.target.config.vocab_size
    assert isinstance(predictor_from(toy_pair), DraftPredictor)


def test_the_eagle_predictor_guesses_the_argmax_of_the_logits_it_returns(eagle_pair):
    predictor = predictor_from(eagle_pair, batch_size=2)
    assert isinstance(predictor, EaglePredictor)
    prompts = [eagle_pair.tokenizer.encode("12 + 7 ="), eagle_pair.tokenizer.encode("3 * 4 =")]
    responses = [[5, 9, 11], [7, 8]]
    logits = predictor.response_logits(prompts, responses)
    assert [tuple(rows.shape) for rows in logits] == [(3, eagle_pair.vocab_size), (2, eagle_pair.vocab_size)]
    assert predictor.predict(prompts, responses) == [rows.argmax(-1).tolist() for rows in logits]


def test_the_reference_engine_refuses_an_eagle_head(eagle_pair):
    with pytest.raises(
        InputError, match=r"pair\.proposer eagle\) decodes on vLLM \(decoding\.engine: vllm\)"
    ):
        BatchedDecoder(eagle_pair.target, eagle_pair.draft, eagle_pair.vocab_size, {0}, 4, 8)
