import base64
import json
import pickle
import zlib

import pytest

from autojudge.errors import InputError
from autojudge.sandbox import Sandbox, SandboxLimits, SandboxPool
from autojudge.tasks import TASKS
from autojudge.tasks.code_answers import CodeRunner, report_outcomes
from autojudge.tasks.jsonl import write_jsonl
from autojudge.tasks.livecodebench import LiveCodeBenchTask, decode_test_cases


def _cases(*cases):
    return json.dumps([{"input": i, "output": o, "testtype": kind} for i, o, kind in cases])


def _compressed(text: str) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(text))).decode()


ROWS = [
    {  # stdin/stdout, AtCoder style, with its private tests compressed as in the published data set
        "question_title": "Sum of two",
        "question_content": "Read A and B and print A + B.",
        "platform": "atcoder",
        "question_id": "abc000_a",
        "contest_date": "2024-01-01T00:00:00",
        "starter_code": "",
        "difficulty": "easy",
        "public_test_cases": _cases(("1 2\n", "3\n", "stdin")),
        "private_test_cases": _compressed(_cases(("10 20\n", "30\n", "stdin"), ("-1 1\n", "0\n", "stdin"))),
        "metadata": "{}",
    },
    {  # functional, LeetCode style
        "question_title": "Maximum gap",
        "question_content": "Return the largest difference between two elements of nums.",
        "platform": "leetcode",
        "question_id": "9001",
        "contest_date": "2024-01-02T00:00:00",
        "starter_code": "class Solution:\n    def maxGap(self, nums: List[int]) -> int:\n        ",
        "difficulty": "medium",
        "public_test_cases": _cases(("[1, 5, 3]", "4", "functional"), ("[7]", "0", "functional")),
        "private_test_cases": _cases(("[-2, 2]", "4", "functional")),
        "metadata": json.dumps({"func_name": "maxGap"}),
    },
]
SUM_RIGHT = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
SUM_WRONG = "```python\na, b = map(int, input().split())\nprint(a - b)\n```"
GAP_RIGHT = "```python\nclass Solution:\n    def maxGap(self, nums: List[int]) -> int:\n        return max(nums) - min(nums)\n```"
GAP_WRONG = "```python\nclass Solution:\n    def maxGap(self, nums: List[int]) -> int:\n        return nums[-1] - nums[0]\n```"
GAP_CONTINUED = "return max(nums) - min(nums)\nExplanation: ..."


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    directory = tmp_path_factory.mktemp("lcb")
    write_jsonl(directory / "test.jsonl", ROWS)
    with SandboxPool(Sandbox(SandboxLimits(timeout_s=2.0))) as pool:
        yield LiveCodeBenchTask(directory, runner=CodeRunner(pool))


def test_rows_become_examples(task):
    stdin, functional = task.load_split("test")
    assert TASKS["livecodebench"] is LiveCodeBenchTask
    assert len(stdin.stdio_tests) == 3 and not stdin.tests
    assert len(functional.tests) == 3 and functional.entry_point == "maxGap"
    assert "```python\n# YOUR CODE HERE" in task.build_prompt(stdin)
    assert "class Solution:" in task.build_prompt(functional)


def test_programs_are_judged_by_their_tests(task):
    stdin, functional = task.load_split("test")
    examples = [stdin, stdin, functional, functional, functional]
    answers = task.extract_answers([SUM_RIGHT, SUM_WRONG, GAP_RIGHT, GAP_WRONG, GAP_CONTINUED], examples)
    assert [report_outcomes(a) for a in answers] == [
        ["pass", "pass", "pass"],
        ["fail", "fail", "fail"],
        ["pass", "pass", "pass"],
        ["fail", "pass", "pass"],
        ["pass", "pass", "pass"],  # continues the starter code
    ]
    scored = task.scores([SUM_RIGHT, SUM_WRONG, GAP_RIGHT, GAP_WRONG], examples[:4])
    assert scored == [True, False, True, False]


def test_test_cases_decode_from_json_or_compressed_form_only():
    plain = _cases(("1\n", "1\n", "stdin"))
    assert decode_test_cases(plain) == decode_test_cases(_compressed(plain)) == json.loads(plain)

    class Sneaky:
        def __reduce__(self):
            return (print, ("unpickling ran code",))

    with pytest.raises(InputError, match="neither JSON"):
        decode_test_cases(base64.b64encode(zlib.compress(pickle.dumps(Sneaky()))).decode())
    with pytest.raises(InputError, match="'input' and 'output'"):
        decode_test_cases('[{"input": "1"}]')
