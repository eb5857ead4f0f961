"""The toy pair's training corpus: an endless, seeded mixture of the toy tasks' problems.

Sources: ``arith`` (the standard word problems), ``arith_variant`` (other names, nouns and
sentences, same numbers) and ``pyfunc`` (the toy code task). Every held-out problem (all splits
but ``train``, and the probe problems) is excluded by its question or prompt text.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from autojudge.errors import InputError
from autojudge.params import ToyParams
from autojudge.tasks import arith_generator
from autojudge.tasks.arith import ArithTask, arith_prompt, arith_split_rows
from autojudge.tasks.base import Example, Task, named_seed
from autojudge.tasks.pyfunc import PyFuncTask, pyfunc_split_rows
from autojudge.tasks.pyfunc_generator import splits as pyfunc_splits

SOURCES = ("arith", "arith_variant", "pyfunc")
VARIANT_PROBE_SPLIT = "variant_validation"  # variant-style arith problems scored during training


@dataclass(frozen=True)
class TrainingText:
    """One training example: the held-out key (question or prompt), the prompt and the response."""

    key: str
    prompt: str
    response: str


def draw_text(source: str, rng: random.Random, index: int) -> TrainingText:
    """One problem of ``source`` drawn from ``rng``."""
    if source == "pyfunc":
        code = pyfunc_splits.generate_problem(rng, f"stream-{index}")
        return TrainingText(code.prompt, code.prompt, code.solution)
    style = "variant" if source == "arith_variant" else "standard"
    problem = arith_generator.generate_problem(rng, f"train-stream-{index}", style)
    return TrainingText(problem.question, arith_prompt(problem.question), " " + problem.solution)


def _source_seed(seed: int, source: str) -> int:
    # arith keeps the bare seed: an arith-only mixture draws exactly the problems it always drew
    return seed if source == "arith" else named_seed(seed, source)


def text_stream(seed: int, mixture: Mapping[str, float], excluded: set[str]) -> Iterator[TrainingText]:
    """Endless training texts, each source drawn with probability proportional to its weight.

    A held-out draw is replaced by the source's next one, so the weights hold after the exclusions.
    """
    sources = [s for s in SOURCES if mixture.get(s, 0) > 0]
    weights = [mixture[s] for s in sources]
    rngs = {s: random.Random(_source_seed(seed, s)) for s in sources}
    chooser = random.Random(seed + 1)
    index = 0
    while True:
        source = sources[0] if len(sources) == 1 else chooser.choices(sources, weights)[0]
        text = draw_text(source, rngs[source], index)
        index += 1
        while text.key in excluded:
            text = draw_text(source, rngs[source], index)
            index += 1
        yield text


@dataclass(frozen=True)
class Probe:
    """Held-out problems of one source, scored during training."""

    source: str
    task: Task
    examples: list[Example]


# the split of each source that probes training (validation) and that measures the pair (test)
SPLITS = {
    "validation": {"arith": "validation", "arith_variant": VARIANT_PROBE_SPLIT, "pyfunc": "validation"},
    "test": {"arith": "test", "arith_variant": "variant", "pyfunc": "test"},
}


def held_out_problems(toy: ToyParams, source: str, purpose: str, limit: int | None = None) -> Probe:
    """The problems of ``source``'s validation or test split (``purpose``), the first ``limit`` of them."""
    split = SPLITS[purpose][source]
    if source == "pyfunc":
        task: Task = PyFuncTask(Path())
        rows = pyfunc_split_rows(toy.code_splits, toy.seed).get(split, [])
    else:
        task = ArithTask(Path())
        size = limit if limit is not None else toy.splits.get(split)
        if size is None:
            raise InputError(f"toy.splits has no {split!r} split (the {purpose} split of {source})")
        rows = arith_split_rows(split, size, toy.seed)
    examples = [task.example_from_row(row, split, i) for i, row in enumerate(rows[:limit])]
    return Probe(source, task, examples)


def mixture_sources(toy: ToyParams) -> list[str]:
    """The sources of the corpus, in SOURCES order."""
    return [s for s in SOURCES if toy.mixture.get(s, 0) > 0]


def probes(toy: ToyParams) -> list[Probe]:
    """The probe problems of each source in the mixture: the first ``probe_problems`` of its validation split."""
    return [
        held_out_problems(toy, source, "validation", toy.probe_problems) for source in mixture_sources(toy)
    ]


def held_out_keys(toy: ToyParams) -> set[str]:
    """Questions and prompts the models must never train on: every split but train, and every probe."""
    keys = {
        row["question"]
        for split, size in toy.splits.items()
        if split != "train"
        for row in arith_split_rows(split, size, toy.seed)
    }
    if toy.mixture.get("pyfunc", 0) > 0:
        keys |= {
            row["prompt"]
            for split, rows in pyfunc_split_rows(toy.code_splits, toy.seed).items()
            if split != "train"
            for row in rows
        }
    for probe in probes(toy):
        keys |= {e.question for e in probe.examples}
    return keys
