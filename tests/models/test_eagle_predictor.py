"""The EAGLE head's teacher-forced guesses (Algorithm 1's predictions for an EAGLE proposer)."""

import pytest
import torch

from autojudge.errors import InputError
from autojudge.models.eagle import new_head, target_hidden_states
from autojudge.models.eagle_predictor import EaglePredictor
from autojudge.models.pair import load_causal_lm


@pytest.fixture(scope="module")
def target(repo, params):
    return load_causal_lm(repo / params.pair.target, torch.float32, role="target")


def _first_draft(head, target, prefix: list[int]) -> int:
    """vLLM's first draft after an accepted ``prefix``, one sequence, no padding: the head reads every
    (token t+1, hidden state t) of the prefix and guesses from its last position."""
    hidden = target_hidden_states(target, [prefix])[0]
    with torch.inference_mode():
        out = head(torch.tensor([prefix[1:]]), hidden[:-1].unsqueeze(0))
        return int(head.logits(out[0, -1]).argmax())


def test_each_guess_is_the_first_draft_after_its_prefix(target):
    head = new_head(target, seed=3)
    generator = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, 1000, (n,), generator=generator).tolist() for n in (2, 9, 5)]
    responses = [torch.randint(3, 1000, (n,), generator=generator).tolist() for n in (6, 1, 11)]
    guesses = EaglePredictor(head, target, target.config.vocab_size, batch_size=2).predict(prompts, responses)
    assert [len(g) for g in guesses] == [len(r) for r in responses]
    expected = [
        [_first_draft(head, target, prompt + response[:i]) for i in range(len(response))]
        for prompt, response in zip(prompts, responses, strict=True)
    ]
    assert guesses == expected


def test_a_one_token_prompt_is_refused(target):
    with pytest.raises(InputError, match="prompt 1 has 1 tokens"):
        EaglePredictor(new_head(target), target, target.config.vocab_size).predict([[5, 6], [7]], [[8], [9]])
