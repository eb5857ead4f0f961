"""Drawing pyfunc problems: the family registry, one problem with its wording, seeded splits."""

from __future__ import annotations

import random
from collections.abc import Callable

from autojudge.tasks.pyfunc_generator import integers, lists, strings
from autojudge.tasks.pyfunc_generator.problem import CodeProblem, Draft
from autojudge.tasks.pyfunc_generator.wording import COMMENTS, INDENT, Style

FAMILIES: dict[str, Callable[[random.Random, Style], Draft]] = {
    family.__name__: family
    for family in (
        integers.add_constant,
        integers.affine,
        integers.two_numbers,
        integers.absolute_difference,
        integers.larger_or_smaller,
        integers.clamp,
        integers.threshold_label,
        integers.divisible,
        integers.in_range,
        lists.sum_filtered,
        lists.count_filtered,
        lists.filter_list,
        lists.map_list,
        lists.product,
        lists.sum_of_squares,
        lists.count_value,
        lists.extreme,
        lists.first_plus_last,
        strings.repeat_string,
        strings.affix,
        strings.count_char,
        strings.reverse_string,
        strings.word_count,
        strings.starts_or_ends,
        strings.change_case,
    )
}


def _call(entry_point: str, args: tuple) -> str:
    return f"{entry_point}({', '.join(repr(a) for a in args)})"


def generate_problem(rng: random.Random, problem_id: str, family: str | None = None) -> CodeProblem:
    """Draw one problem (of ``family``, or of a family drawn uniformly)."""
    family = family or rng.choice(sorted(FAMILIES))
    style_rng = random.Random(rng.getrandbits(64))  # the wording's own stream
    draft = FAMILIES[family](rng, Style(style_rng))
    tests = tuple(
        f"assert {_call(draft.entry_point, case)} == {draft.reference(*case)!r}" for case in draft.cases
    )
    body = draft.body
    if style_rng.random() < 0.25:
        body = [style_rng.choice(COMMENTS), *body]
    solution = "".join(f"\n{INDENT}{line}" for line in body)
    return CodeProblem(
        problem_id, family, draft.description, draft.entry_point, draft.params, tests, solution
    )


def generate_split(
    count: int,
    seed: int,
    prefix: str = "pyfunc",
    excluded: frozenset[str] = frozenset(),
    unique: bool = False,
) -> list[CodeProblem]:
    """Generate ``count`` problems deterministically from ``seed``, skipping prompts in ``excluded``
    (and, with ``unique``, prompts already drawn)."""
    rng = random.Random(seed)
    problems: list[CodeProblem] = []
    seen = set(excluded)
    index = 0
    while len(problems) < count:
        problem = generate_problem(rng, f"{prefix}-{seed}-{index:06d}")
        index += 1
        if problem.prompt in seen:
            continue
        if unique:
            seen.add(problem.prompt)
        problems.append(problem)
    return problems
