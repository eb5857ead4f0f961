"""The toy pair's training corpus: the mixture, the held-out exclusions and the probes."""

import random
from collections import Counter
from itertools import islice

import pytest

from autojudge.errors import InputError
from autojudge.params import load_params
from autojudge.tasks.arith import arith_prompt
from autojudge.tasks.arith_generator import generate_problem
from autojudge.tasks.code_answers import CodeExample
from autojudge.tasks.pyfunc import pyfunc_split_rows
from autojudge.world.corpus import held_out_keys, held_out_problems, probes, text_stream


def _toy(mixture, **update):
    toy = load_params("params.yaml").toy
    return toy.model_copy(update={"mixture": mixture, **update})


def test_arith_only_stream_draws_the_problems_the_committed_pair_was_trained_on():
    toy = _toy({"arith": 1.0})
    excluded = held_out_keys(toy)
    rng = random.Random(toy.seed)
    expected = []
    while len(expected) < 200:
        problem = generate_problem(rng, "any")
        if problem.question not in excluded:
            expected.append((arith_prompt(problem.question), " " + problem.solution))
    drawn = [(t.prompt, t.response) for t in islice(text_stream(toy.seed, toy.mixture, excluded), 200)]
    assert drawn == expected


def test_mixture_follows_its_weights_and_never_yields_a_held_out_problem():
    toy = _toy({"arith": 1.0, "arith_variant": 1.0, "pyfunc": 2.0})
    excluded = held_out_keys(toy)
    code_test_prompts = {row["prompt"] for row in pyfunc_split_rows(toy.code_splits, toy.seed)["test"]}
    assert code_test_prompts <= excluded
    texts = list(islice(text_stream(3, toy.mixture, excluded), 4000))
    assert not {t.key for t in texts} & excluded
    kinds = Counter(
        "pyfunc"
        if t.prompt.startswith("Return") or "def " in t.prompt
        else "variant"
        if "owns at the end" in t.prompt
        else "arith"
        for t in texts
    )
    assert abs(kinds["pyfunc"] / 4000 - 0.5) < 0.03
    assert abs(kinds["variant"] / 4000 - 0.25) < 0.03
    assert abs(kinds["arith"] / 4000 - 0.25) < 0.03


def test_each_source_is_probed_on_held_out_problems():
    toy = _toy({"arith": 1.0, "arith_variant": 1.0, "pyfunc": 1.0}, probe_problems=7)
    found = {p.source: p for p in probes(toy)}
    assert set(found) == {"arith", "arith_variant", "pyfunc"}
    assert all(len(p.examples) == 7 for p in found.values())
    assert all(isinstance(e, CodeExample) and e.tests for e in found["pyfunc"].examples)
    assert all("owns at the end" in e.question for e in found["arith_variant"].examples)
    assert {e.question for p in found.values() for e in p.examples} <= held_out_keys(toy)


def test_variant_has_its_own_validation_and_test_splits():
    """Probes read variant_validation, the measurement reads variant: both variant-style, never the same."""
    toy = _toy(
        {"arith": 1.0, "arith_variant": 1.0}, splits={"train": 10, "variant": 20, "variant_validation": 20}
    )
    validation = held_out_problems(toy, "arith_variant", "validation", 20).examples
    test = held_out_problems(toy, "arith_variant", "test").examples
    assert len(test) == 20 and all("owns at the end" in e.question for e in validation + test)
    assert not {e.question for e in validation} & {e.question for e in test}
    assert {e.question for e in test} <= held_out_keys(toy)


def test_a_missing_test_split_is_named():
    toy = _toy({"arith": 1.0, "arith_variant": 1.0}, splits={"train": 10, "test": 5})
    with pytest.raises(InputError, match="'variant' split"):
        held_out_problems(toy, "arith_variant", "test")
