"""LiveCodeBench ``code_generation_lite`` rows read from a local JSON Lines file (no downloads).

Each row has question_title, question_content, platform, question_id, contest_date, starter_code,
difficulty, public_test_cases, private_test_cases and metadata. The test cases are JSON strings of
``[{"input", "output", "testtype"}]``:

* ``stdin`` tests run the program as a script on the input and compare its output, line by line,
  ignoring trailing spaces (`autojudge.sandbox.same_output`);
* ``functional`` tests (LeetCode style) call ``Solution().<metadata.func_name>(*args)``, each line
  of the input being one JSON argument, and compare the result with the JSON output.

``private_test_cases`` is plain JSON here; in the published data set it is base64 of zlib of a
pickled JSON string. That form is decoded too, by an unpickler that refuses every global, so only
plain strings come out of it and unpickling cannot run code (`decode_test_cases`).
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import pickle
import zlib
from collections.abc import Mapping
from typing import Any, ClassVar

from autojudge.errors import InputError
from autojudge.tasks.base import Example
from autojudge.tasks.code_answers import CodeExample, CodeTask, all_pass_report, extract_program

# what LiveCodeBench's own harness makes available to LeetCode-style solutions
IMPORTS = (
    "from typing import *\nfrom collections import *\nfrom functools import *\nfrom itertools import *\n"
    "from heapq import *\nfrom bisect import *\nimport math\nimport string\nimport re\nimport sys\n"
    "sys.setrecursionlimit(50000)\n"
)
PROMPT = (
    "You will be given a question (problem specification) and will generate a correct Python program "
    "that matches the specification and passes all tests.\n\nQuestion: {question}\n\n"
)
STARTER = (
    "Use the following starter code and enclose your code within delimiters.\n```python\n{starter}\n```\n\n"
)
STDIN = (
    "Read the inputs from stdin, solve the problem and write the answer to stdout. "
    "Enclose your code within delimiters as follows.\n```python\n# YOUR CODE HERE\n```\n\n"
)
ANSWER = "### Answer: (use the provided format with backticks)\n\n"


class _StringsOnly(pickle.Unpickler):
    """An unpickler that loads no class or function: plain data (here a JSON string) only."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


def decode_test_cases(text: str) -> list[dict[str, str]]:
    """Test cases from plain JSON, or from LiveCodeBench's base64(zlib(pickle(JSON))) encoding."""
    try:
        cases = json.loads(text)
    except json.JSONDecodeError:
        try:
            payload = _StringsOnly(io.BytesIO(zlib.decompress(base64.b64decode(text)))).load()
            cases = json.loads(payload)
        except (binascii.Error, zlib.error, pickle.UnpicklingError, EOFError, TypeError, ValueError) as error:
            raise InputError(
                f"test cases are neither JSON nor LiveCodeBench's compressed form: {error}"
            ) from None
    if not isinstance(cases, list) or not all(
        isinstance(c, dict) and {"input", "output"} <= set(c) for c in cases
    ):
        raise InputError("test cases must be a list of objects with 'input' and 'output'")
    return cases


def functional_test(case: Mapping[str, str], func_name: str) -> str:
    """An assert calling ``Solution().func_name`` with the case's JSON arguments, one per input line."""
    return (
        "import json as _json\n"
        f"_args = [_json.loads(_line) for _line in {case['input']!r}.split('\\n') if _line.strip()]\n"
        f"_result = Solution().{func_name}(*_args)\n"
        f"assert _json.loads(_json.dumps(_result)) == _json.loads({case['output']!r})\n"
    )


class LiveCodeBenchTask(CodeTask):
    """LiveCodeBench problems: answers are test reports of the fenced program; correct means pass@1."""

    name = "livecodebench"
    required_fields: ClassVar[Mapping[str, type]] = {
        "question_title": str,
        "question_content": str,
        "platform": str,
        "question_id": str,
        "starter_code": str,
        "public_test_cases": str,
        "private_test_cases": str,
        "metadata": str,
    }

    def example_from_row(self, row: Mapping[str, Any], split: str, index: int) -> CodeExample:
        where = f"{self.split_path(split)}:{index + 1}"
        try:
            cases = decode_test_cases(row["public_test_cases"])
            cases += decode_test_cases(row["private_test_cases"]) if row["private_test_cases"].strip() else []
            metadata = json.loads(row["metadata"] or "{}")
        except (InputError, json.JSONDecodeError) as error:
            raise InputError(f"{where}: {error}") from None
        tests, stdio_tests = [], []
        for case in cases:
            if case.get("testtype", "stdin") == "functional":
                if "func_name" not in metadata:
                    raise InputError(f"{where}: a functional test needs 'func_name' in metadata")
                tests.append(functional_test(case, metadata["func_name"]))
            else:
                stdio_tests.append((case["input"], case["output"]))
        if not tests and not stdio_tests:
            raise InputError(f"{where}: no test cases")
        return CodeExample(
            id=row["question_id"],
            question=row["question_content"],
            answer=all_pass_report(len(tests) + len(stdio_tests)),
            code_prefix=row["starter_code"],
            tests=tuple(tests),
            stdio_tests=tuple(stdio_tests),
            entry_point=metadata.get("func_name", ""),
        )

    def build_prompt(self, example: Example) -> str:
        prompt = PROMPT.format(question=example.question)
        starter = getattr(example, "code_prefix", "")
        prompt += STARTER.format(starter=starter) if starter.strip() else STDIN
        return prompt + ANSWER

    def program(self, response: str, example: CodeExample) -> str:
        """The fenced program (else the response), after the imports LiveCodeBench's harness provides."""
        code = extract_program(response, example.code_prefix)
        return IMPORTS + code if example.tests else code
