"""Fixtures of the model tests."""

import pytest

from autojudge.engines.hf import HFEngine


@pytest.fixture(scope="session")
def greedy_rows(tiny_random_pair) -> list[tuple[list[int], list[int]]]:
    """(prompt, the tiny target's greedy response of 12 tokens) for 16 word problems."""
    pair = tiny_random_pair
    prompts = [pair.tokenizer.encode(f"Tom has {n} apples and buys {n + 3} more.") for n in range(16)]
    responses = HFEngine(pair.target, pair.pad_token_id, set(), batch_size=16).continue_prefixes(
        prompts, [12] * len(prompts)
    )
    return list(zip(prompts, responses, strict=True))
