import re
from collections import Counter

from autojudge.tasks.pyfunc_generator.splits import FAMILIES, generate_split


def test_deterministic():
    assert 15 <= len(FAMILIES) <= 25
    first, again, other = generate_split(60, seed=1), generate_split(60, seed=1), generate_split(60, seed=2)
    assert first == again
    assert [p.prompt for p in first] != [p.prompt for p in other]


def test_problems_are_small_function_synthesis_tasks():
    problems = generate_split(1000, seed=5)
    assert set(Counter(p.family for p in problems)) == set(FAMILIES)
    assert len({p.prompt for p in problems}) > 500  # constants, operators and names differ
    assert len({(p.prompt, p.tests) for p in problems}) > 950  # and test inputs
    for problem in problems:
        description, signature = problem.prompt.split("\n")
        assert (
            description.endswith(".")
            and signature == f"def {problem.entry_point}({', '.join(problem.params)}):"
        )
        assert 3 <= len(problem.tests) <= 5
        assert all(t.startswith(f"assert {problem.entry_point}(") for t in problem.tests)
        assert problem.solution.startswith("\n    ")
    # short enough for a tiny model: word-and-symbol pieces, a rough upper bound on tokens
    pieces = sorted(len(re.findall(r"\w+|[^\w\s]", p.solution)) for p in problems)
    assert pieces[len(pieces) // 2] < 25 and pieces[-1] < 60
