import pytest

from autojudge.tasks.math_answers import answers_equivalent, extract_final_answer


@pytest.mark.parametrize(
    ("first", "second"),
    [("1.5", "3/2"), ("1.50", "3/2"), ("$1,000", "1000"), ("72", "72.0"), ("18 dollars", "18")],
)
def test_equivalent_answers(first, second):
    assert answers_equivalent(first, second)
    assert answers_equivalent(second, first)


@pytest.mark.parametrize(("first", "second"), [("5", "6"), ("1.5", "15"), (None, "3"), (None, None)])
def test_different_or_missing_answers(first, second):
    assert not answers_equivalent(first, second)


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        ("So he has 12. The final answer is 12.", "12"),
        ("The final answer is $1,000.", "1,000"),
        ("The final answer is 3/2", "3/2"),
        ("first 5 then... The final answer is 7. The final answer is 9.", "9"),
        ("Natalia sold 48/2 = 24 clips.\n#### 72", "72"),
        ("no marker but numbers 3 and 41", "41"),
        ("no answer at all", None),
    ],
)
def test_extract_final_answer(response, answer):
    assert extract_final_answer(response) == answer
