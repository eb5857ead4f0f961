import json

import pytest

from autojudge.errors import InputError
from autojudge.tasks import get_task

ROWS = [
    {
        "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
        "How many clips did Natalia sell altogether in April and May?",
        "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
        "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72",
    },
    {
        "question": "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. "
        "How much did she earn?",
        "answer": "Weng earns 12/60 = $<<12/60=0.2>>0.2 per minute.\n"
        "Working 50 minutes, she earned 0.2 x 50 = $<<0.2*50=10>>10.\n#### 10",
    },
    {
        "question": "A shop sells a TV for $1,200 and a radio for $300. What do both cost together?",
        "answer": "1200 + 300 = <<1200+300=1500>>1500\n#### 1,500",
    },
]


@pytest.fixture
def gsm8k(tmp_path):
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    return get_task("gsm8k", tmp_path)


def test_reads_standard_format(gsm8k):
    examples = gsm8k.load_split("test")
    assert [e.answer for e in examples] == ["72", "10", "1,500"]
    assert examples[0].solution.endswith("altogether in April and May.")
    assert "Natalia sold clips" in gsm8k.build_prompt(examples[0])
    assert "The final answer is" in gsm8k.build_prompt(examples[0])


def test_scores_responses_with_math_equivalence(gsm8k):
    first, second, third = gsm8k.load_split("test")
    assert gsm8k.score("She sold 72 clips. The final answer is 72.", first)
    assert not gsm8k.score("The final answer is 71.", first)
    assert gsm8k.score("The final answer is $10.00", second)
    assert gsm8k.score("Together: The final answer is $1500.", third)


def test_row_without_answer_marker_names_file_and_line(tmp_path):
    rows = [ROWS[0], {"question": "q?", "answer": "no marker here"}]
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(InputError, match=r"test\.jsonl:2: answer has no '####"):
        get_task("gsm8k", tmp_path).load_split("test")


def test_unknown_task_is_named():
    with pytest.raises(InputError, match="unknown task 'chess'"):
        get_task("chess", ".")
