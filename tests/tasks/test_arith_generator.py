import random
import re
from collections import Counter

from autojudge.tasks.arith_generator import (
    ANSWER_PREFIX,
    ITEMS_UNSEEN,
    NAMES_STANDARD,
    NAMES_UNSEEN,
    STYLES,
    generate_split,
)
from autojudge.tasks.pyfunc_generator import splits as pyfunc_splits

EQUATION = re.compile(r"(\d+) ([+\-*]) (\d+) = (\d+)")


def _check_equations(solution: str) -> list[int]:
    results = []
    for left, op, right, result in EQUATION.findall(solution):
        a, b, c = int(left), int(right), int(result)
        assert {"+": a + b, "-": a - b, "*": a * b}[op] == c, solution
        results.append(c)
    return results


def test_same_seed_same_problems_and_other_seed_differs():
    first, again, other = generate_split(50, seed=3), generate_split(50, seed=3), generate_split(50, seed=4)
    assert first == again
    assert [p.question for p in first] != [p.question for p in other]


def test_solutions_are_correct_chains_of_2_to_4_steps():
    for problem in generate_split(500, seed=11):
        results = _check_equations(problem.solution)
        assert 2 <= len(results) <= 4
        assert results[-1] == problem.answer
        assert problem.solution.endswith(f"{ANSWER_PREFIX} {problem.answer}.")
        assert all(0 <= r < 100 for r in results)


def test_solution_wording_varies_while_numbers_follow_the_question():
    problems = generate_split(1000, seed=12)
    openers = Counter(" ".join(p.solution.split()[:2]) for p in problems)
    assert len(openers) >= 3
    assert max(openers.values()) / len(problems) < 0.5
    connectives = Counter(
        word
        for p in problems
        for word in ("Then", "Next,", "After that,", "Now")
        if f". {word} " in p.solution
    )
    assert len(connectives) == 4
    # the same question numbers with different wordings: many distinct solutions per answer chain
    assert len({p.solution for p in problems}) == len(problems)


def test_shifted_split_has_other_templates_and_larger_numbers():
    standard, shifted = generate_split(300, seed=1), generate_split(300, seed=1, style="shifted")
    assert max(p.answer for p in shifted) > 100
    standard_first = {p.question.split()[0] for p in standard}
    shifted_first = {p.question.split()[0] for p in shifted}
    assert standard_first.isdisjoint(shifted_first)
    for problem in shifted:
        assert _check_equations(problem.solution)[-1] == problem.answer


def test_variant_split_has_other_names_nouns_and_sentences_but_standard_numbers():
    standard, variant = generate_split(400, seed=2), generate_split(400, seed=2, style="variant")
    standard_words = {w for p in standard for w in p.question.replace(".", " ").replace("?", " ").split()}
    for problem in variant:
        assert problem.answer < 100  # the standard ceiling: numbers stay in the trained range
        assert _check_equations(problem.solution)[-1] == problem.answer
        assert not problem.question.startswith(tuple(n for n, _, _ in NAMES_STANDARD))
        assert "How many" not in problem.question
    variant_words = {w for p in variant for w in p.question.replace(".", " ").replace("?", " ").split()}
    assert {"shells", "purchases", "collects", "Omar"} <= variant_words - standard_words


def _words(texts) -> set[str]:
    return {w.strip(".,:?!()'\"") for text in texts for w in text.split()}


def test_unseen_split_keeps_standard_sentences_with_words_no_training_source_has():
    unseen = generate_split(400, seed=5, style="unseen")
    standard = generate_split(400, seed=5)
    new_words = {n for n, _, _ in NAMES_UNSEEN} | set(ITEMS_UNSEEN)
    for problem in unseen:
        assert problem.answer < 100 and _check_equations(problem.solution)[-1] == problem.answer
    assert new_words <= _words(p.question for p in unseen)
    assert {"buys", "finds", "How"} <= _words(p.question for p in unseen) & _words(
        p.question for p in standard
    )
    others = [p for style in STYLES if style != "unseen" for p in generate_split(400, 6, style)]
    seen = [p.question for p in others] + [p.solution for p in others]
    rng = random.Random(0)  # the code task too: every source of the toy corpus, and more
    codes = [pyfunc_splits.generate_problem(rng, str(i)) for i in range(400)]
    seen += [c.prompt for c in codes] + [c.solution for c in codes]
    assert not new_words & _words(seen)
