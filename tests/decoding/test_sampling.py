"""Sampled reference decoding: lossless with the exact rule (chi-square against the target's processed
distribution), seeded, the nucleus kept by a rule that accepts everything, and the measured shift."""

from collections import Counter

import pytest
import torch
from scipy.stats import chisquare

from autojudge.decoding.batched import BatchedDecoder, Request
from autojudge.decoding.factory import speculative
from autojudge.decoding.sampling import Sampling, verify
from autojudge.errors import InputError
from autojudge.models.pair import ModelPair
from autojudge.models.prompts import encode_prompt
from autojudge.rules.acceptance import ExactMatch, TopK

SHARP = 0.05  # the random models' logits are nearly flat: a low temperature gives a few likely tokens
SEEDS = 2000


def _prompt(task, tokenizer):
    return encode_prompt(tokenizer, task.build_prompt(task.load_split("validation", 1)[0]))


def _same(pair) -> ModelPair:
    """The target drafting for itself: its greedy draft is accepted with p(x), else the residual is drawn."""
    return ModelPair("same", pair.target, pair.target, pair.tokenizer, pair.target_path, pair.target_path)


@torch.no_grad()
def _processed(pair, tokens: list[int], sampling: Sampling) -> torch.Tensor:
    return torch.softmax(sampling.process(pair.target(torch.tensor([tokens])).logits[0, -1]), dim=-1)


def _chisquare_pvalue(counts: Counter, probs: torch.Tensor) -> float:
    """Pearson's test over the tokens expected at least 5 times, the rest pooled in one bin."""
    total = sum(counts.values())
    expected = probs.double() * total
    kept = [t for t in range(len(probs)) if expected[t] >= 5]
    observed = [counts.get(t, 0) for t in kept]
    expected_kept = [float(expected[t]) for t in kept]
    rest = total - sum(observed)
    observed.append(rest)
    expected_kept.append(total - sum(expected_kept))
    return float(chisquare(observed, expected_kept).pvalue)


@pytest.fixture(scope="module")
def samples(tiny_random_pair, arith_task):
    """The first two response tokens of SEEDS seeded decodes with the exact rule (window 2)."""
    pair = _same(tiny_random_pair)
    prompt = _prompt(arith_task, pair.tokenizer)
    decoder = BatchedDecoder(
        pair.target,
        pair.draft,
        pair.vocab_size,
        pair.eos_token_ids,
        window=2,
        max_new_tokens=3,
        batch_size=500,
    )
    requests = [Request(prompt, ExactMatch(), Sampling(SHARP, seed=s)) for s in range(SEEDS)]
    return pair, prompt, [tuple(g.tokens[:2]) for g in decoder.generate(requests, progress=False)]


def test_exact_speculative_sampling_draws_from_the_targets_processed_distribution(samples):
    pair, prompt, pairs = samples
    first = Counter(tokens[0] for tokens in pairs)
    assert _chisquare_pvalue(first, _processed(pair, prompt, Sampling(SHARP))) > 1e-3
    # the second token is the first one verification decides: given the commonest first token
    common, _ = first.most_common(1)[0]
    second = Counter(tokens[1] for tokens in pairs if tokens[0] == common and len(tokens) > 1)
    assert sum(second.values()) > 300
    assert _chisquare_pvalue(second, _processed(pair, [*prompt, common], Sampling(SHARP))) > 1e-3
    # the same counts tell another temperature apart (the test has power)
    assert _chisquare_pvalue(second, _processed(pair, [*prompt, common], Sampling(2 * SHARP))) < 1e-6


def test_a_seed_reproduces_its_tokens_and_the_batched_engine_draws_the_same(tiny_random_pair, arith_task):
    prompt = _prompt(arith_task, tiny_random_pair.tokenizer)
    decoder = speculative(tiny_random_pair, ExactMatch(), window=3, max_new_tokens=12, sampling=Sampling(0.3))
    runs = {seed: decoder.generate(prompt, seed=seed).tokens for seed in range(4)}
    assert runs[1] == decoder.generate(prompt, seed=1).tokens
    assert len({tuple(tokens) for tokens in runs.values()}) > 1
    batched = BatchedDecoder(
        tiny_random_pair.target, tiny_random_pair.draft, tiny_random_pair.vocab_size,
        tiny_random_pair.eos_token_ids, window=3, max_new_tokens=12, batch_size=4,
    )  # fmt: skip
    requests = [Request(prompt, ExactMatch(), Sampling(0.3, seed=seed)) for seed in range(4)]
    assert [g.tokens for g in batched.generate(requests)] == list(runs.values())


def test_a_rule_accepting_everything_stays_inside_the_nucleus(tiny_random_pair, arith_task):
    prompt = _prompt(arith_task, tiny_random_pair.tokenizer)
    sampling = Sampling(SHARP, top_p=0.5)
    decoder = speculative(tiny_random_pair, TopK(10_000), window=4, max_new_tokens=20, sampling=sampling)
    for seed in range(5):
        result = decoder.generate(prompt, seed=seed)
        for index, token in enumerate(result.tokens):
            assert _processed(tiny_random_pair, prompt + result.tokens[:index], sampling)[token] > 0


def test_the_observed_shift_is_the_rejected_mass_where_the_rule_would_accept():
    logits = torch.log(torch.tensor([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]]))
    everything, nothing = TopK(3), ExactMatch()
    verdict = verify(
        nothing, logits, [1, 1], None, torch.zeros(2, 1), sampling=Sampling(1.0),
        generator=torch.Generator().manual_seed(0), observed=(everything, nothing),
    )  # fmt: skip
    decided = min(verdict.accepted + 1, 2)
    assert verdict.shifts[0] == pytest.approx(sum([0.7, 0.5][:decided]), rel=1e-5)  # 1 - p(x) per position
    assert verdict.shifts[1] == 0.0
    greedy = verify(nothing, logits, [1, 1], None, torch.zeros(2, 1), observed=(everything,))
    assert greedy.accepted == 0 and greedy.follow == 0 and greedy.shifts == [1.0]


@pytest.mark.parametrize(
    ("settings", "message"), [({"temperature": 0}, "temperature"), ({"top_p": 0}, "top_p")]
)
def test_bad_sampling_settings_are_refused(settings, message):
    with pytest.raises(InputError, match=message):
        Sampling(**settings)
