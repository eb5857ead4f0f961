from collections import Counter
from pathlib import Path

import pytest

from autojudge.sandbox import Sandbox, SandboxPool
from autojudge.tasks import TASKS
from autojudge.tasks.code_answers import CodeRunner, report_outcomes, report_passed
from autojudge.tasks.humaneval import (
    HumanEvalTask,
    read_humaneval_problems,
    split_check,
    write_humaneval_split,
)


@pytest.fixture(scope="module")
def task():
    with SandboxPool(Sandbox()) as pool:
        yield HumanEvalTask(Path("unused"), runner=CodeRunner(pool))


def test_problems_come_from_the_installed_package(tmp_path):
    problems = read_humaneval_problems()
    assert len(problems) == 164 and problems[0]["task_id"] == "HumanEval/0"
    write_humaneval_split(tmp_path)
    examples = HumanEvalTask(tmp_path).load_split("test")
    assert [e.id for e in examples] == [p["task_id"] for p in problems]
    assert TASKS["humaneval"] is HumanEvalTask


def test_check_is_split_into_one_test_per_assert():
    test = "METADATA = {}\n\ndef check(candidate):\n    import math\n    assert candidate(1) == 2\n"
    test += "    x = 3\n    assert candidate(x) == 4\n    for i in range(3):\n        assert candidate(i) == i + 1\n"
    tests = split_check(test, "inc")
    assert len(tests) == 3
    assert all(t.startswith("METADATA = {}") and t.endswith("check(inc)\n") for t in tests)
    assert "import math" in tests[1] and "x = 3" in tests[1] and "x = 3" not in tests[0]
    assert split_check("def helper():\n    pass\n", "f") == ("def helper():\n    pass\n\ncheck(f)\n",)
    counts = Counter(len(split_check(p["test"], p["entry_point"])) > 1 for p in read_humaneval_problems())
    assert counts[True] >= 159


def test_all_canonical_solutions_pass(task):
    examples = task.packaged_examples()
    assert task.scores([e.solution for e in examples], examples) == [True] * 164


def test_broken_solutions_fail(task):
    examples = task.packaged_examples()
    broken = task.extract_answers(["    return None\n"] * 164, examples)
    assert not any(report_passed(a) for a in broken)
    raising = task.extract_answers(["    raise ValueError('no')\n"] * 20, examples[:20])
    assert not any(report_passed(a) for a in raising)
    assert all("ValueError" in report_outcomes(a) for a in raising)
