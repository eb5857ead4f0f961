import re
from collections import Counter

import pytest

from autojudge.sandbox import Sandbox, SandboxLimits, SandboxPool
from autojudge.tasks.code_answers import CodeRunner, report_passed
from autojudge.tasks.pyfunc import PyFuncTask
from autojudge.tasks.pyfunc_generator.splits import generate_split


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    """A pyfunc task without splits, to run generated solutions against their tests."""
    with SandboxPool(Sandbox(SandboxLimits(timeout_s=2.0))) as pool:
        yield PyFuncTask(tmp_path_factory.mktemp("pyfunc"), runner=CodeRunner(pool))


def test_wording_varies_within_a_family_and_every_variant_passes(task):
    problems = [
        p
        for p in generate_split(800, seed=9)
        if p.family in ("sum_filtered", "larger_or_smaller", "count_char")
    ]
    by_family = Counter(p.family for p in problems)
    shapes = {family: set() for family in by_family}
    for problem in problems:  # the solution's shape with names and constants masked
        shapes[problem.family].add(re.sub(r"\b[a-z_]\w*\b|\d+|'[^']*'", "_", problem.solution))
    assert all(len(found) >= 4 for found in shapes.values()), shapes
    comments = sum(p.solution.startswith("\n    #") for p in problems)
    assert 0.1 < comments / len(problems) < 0.4
    examples = [task.example_from_row(_row(p), "test", i) for i, p in enumerate(problems)]
    answers = task.extract_answers([p.solution for p in problems], examples)
    assert all(report_passed(a) for a in answers)


def _row(problem):
    return {
        "id": problem.id,
        "prompt": problem.prompt,
        "tests": list(problem.tests),
        "entry_point": problem.entry_point,
        "solution": problem.solution,
    }
