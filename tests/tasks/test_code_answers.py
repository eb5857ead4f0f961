import json

import pytest

from autojudge.sandbox import Sandbox, SandboxLimits, SandboxPool
from autojudge.tasks.code_answers import (
    CodeExample,
    CodeRunner,
    all_pass_report,
    extract_program,
    report_json,
    report_outcomes,
    report_passed,
)
from autojudge.tasks.pyfunc import PyFuncTask

SIGNATURE = "def double(x):"
EXAMPLE = CodeExample(
    id="double",
    question=f"Return x times 2.\n{SIGNATURE}",
    answer=all_pass_report(3),
    solution="\n    return 2 * x",
    code_prefix=SIGNATURE,
    tests=("assert double(1) == 2", "assert double(0) == 0", "assert double(-3) == -6"),
    entry_point="double",
)


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(Sandbox(SandboxLimits(timeout_s=1.0, startup_s=1.0))) as pool:
        yield pool


@pytest.fixture
def task(pool, tmp_path):
    return PyFuncTask(tmp_path, runner=CodeRunner(pool))


def test_program_from_a_fenced_block_or_a_continuation():
    fenced = "Here you go:\n```python\ndef double(x):\n    return x + x\n```\nIt doubles."
    assert extract_program(fenced, SIGNATURE) == "def double(x):\n    return x + x\n"
    assert extract_program("```\nprint(1)\n```", "") == "print(1)\n"
    assert extract_program("```py\nprint(2)", "") == "print(2)"  # a response cut off inside its block
    prefix = "import math\ndef f(x):\n"
    assert extract_program("```python\nreturn 1\n```", prefix).startswith("import math\n")
    # a continuation ends before the first line that is not indented
    continuation = "\n    y = x * 2\n\n    return y\nprint(double(3))\nmore text"
    assert extract_program(continuation, SIGNATURE) == "def double(x):\n    y = x * 2\n\n    return y"
    assert extract_program(" return x", SIGNATURE) == "def double(x): return x"
    assert extract_program("    return 1\ndef helper():", "def f():\n") == "def f():\n    return 1"
    assert extract_program("print(3)", "") == "print(3)"


def test_reports_are_canonical_json():
    assert report_json(["pass", "fail"]) == '{"tests":["pass","fail"]}'
    assert report_outcomes(all_pass_report(2)) == ["pass", "pass"]
    assert report_passed(all_pass_report(2)) and not report_passed(report_json(["pass", "timeout"]))
    assert not report_passed(None)


def test_answers_are_test_reports_and_equivalence_is_identity(task):
    responses = [
        "\n    return 2 * x",
        "\n    return x + x",  # another wording, the same behaviour
        "\n    return x * 3",  # fails the two tests with x != 0
        "\n    return x * 4",  # fails them too: an equivalent answer though the program differs
        "\n    return 2 / 0",
        "\n    return (",
        "\n    while True:\n        pass",
    ]
    answers = task.extract_answers(responses, [EXAMPLE] * len(responses))
    assert [json.loads(a)["tests"] for a in answers] == [
        ["pass"] * 3,
        ["pass"] * 3,
        ["fail", "pass", "fail"],
        ["fail", "pass", "fail"],
        ["ZeroDivisionError"] * 3,
        ["syntax_error"] * 3,
        ["timeout"] * 3,
    ]
    assert task.equivalent(answers[0], answers[1]) and task.equivalent(answers[2], answers[3])
    assert not task.equivalent(answers[0], answers[2]) and not task.equivalent(None, None)
    assert [task.score(r, EXAMPLE) for r in responses[:3]] == [True, True, False]
    assert task.scores(responses[:3], [EXAMPLE] * 3) == [True, True, False]
    assert task.extract_answer_for("\n    return x + x", EXAMPLE) == EXAMPLE.answer
    with pytest.raises(TypeError, match="extract_answer_for"):
        task.extract_answer("\n    return x")


def test_identical_programs_run_once_and_the_disk_cache_is_shared(pool, tmp_path):
    runner = CodeRunner(pool, cache_dir=tmp_path / "cache")
    programs = [
        "def double(x):\n    return x * 2",
        "def double(x):\n    return x * 2",
        "def double(x):\n    return x",
    ]
    first = runner.reports(programs, [EXAMPLE] * 3)
    assert runner.runs == 2 and first[0] == first[1] == EXAMPLE.answer
    assert runner.reports(programs[:1], [EXAMPLE]) == first[:1] and runner.runs == 2
    other = CodeRunner(pool, cache_dir=tmp_path / "cache")
    assert other.reports(programs, [EXAMPLE] * 3) == first and other.runs == 0
    changed = CodeExample(**{**EXAMPLE.__dict__, "tests": ("assert double(2) == 4",)})
    assert runner.key(programs[0], changed) != runner.key(programs[0], EXAMPLE)


def test_stdin_stdout_tests(pool):
    example = CodeExample(
        id="echo",
        question="Print the sum.",
        answer=all_pass_report(2),
        stdio_tests=(("1 2\n", "3\n"), ("5 5\n", "10")),
    )
    runner = CodeRunner(pool)
    right = "a, b = map(int, input().split())\nprint(a + b)"
    wrong = "a, b = map(int, input().split())\nprint(a * b)"
    assert runner.reports([right, wrong], [example, example]) == [
        all_pass_report(2),
        report_json(["fail", "fail"]),
    ]
