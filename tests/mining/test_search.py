"""Algorithm 1 on a scripted world: a fake target, draft and task whose answers depend on known positions."""

from pathlib import Path

from autojudge.mining.search import ImportantTokenSearch, MiningProblem, Mismatch
from autojudge.tasks.code_answers import report_outcomes
from autojudge.tasks.pyfunc import PyFuncTask

EOS, PROMPT = 99, [50]


class Tokenizer:
    def decode(self, ids, skip_special_tokens=True):
        return " ".join(str(i) for i in ids if i != EOS)


class Task:
    """The answer is the last token of the response."""

    def extract_answer(self, response):
        return response.split()[-1] if response.split() else None

    def equivalent(self, first, second):
        return first is not None and first == second


class Target:
    """Responses have content positions 0-4 (default token 1), then answer r[3] + 1, then EOS."""

    name = "fake"

    def __init__(self):
        self.calls = []

    def complete(self, response):
        response = list(response)
        while len(response) < 5:
            response.append(1)
        if len(response) == 5:
            response.append(response[3] + 1)
        if len(response) == 6:
            response.append(EOS)
        return response

    def continue_prefixes(self, prefixes, max_new_tokens):
        self.calls.append(len(prefixes))
        outputs = []
        for prefix, cap in zip(prefixes, max_new_tokens, strict=True):
            response = prefix[len(PROMPT) :]
            outputs.append(self.complete(response)[len(response) :][:cap])
        return outputs

    def close(self):
        pass


class Draft:
    """Proposes 3 where the target would write content at positions 1 and 3, else agrees."""

    def __init__(self):
        self.calls = 0

    def predict(self, prompts, responses):
        self.calls += 1
        predictions = []
        for response in responses:
            row = []
            for position in range(len(response)):
                if position in (1, 3):
                    row.append(3)
                elif position == 5:
                    row.append(response[3] + 1)
                else:
                    row.append(response[position] if position < 5 else EOS)
            predictions.append(row)
        return predictions


def _search(target, draft, cap=10):
    return ImportantTokenSearch(Task(), Tokenizer(), target, draft, cap, {EOS}, pool_size=2)


def test_unimportant_swap_is_kept_and_important_one_is_not():
    target, draft = Target(), Draft()
    (result,) = list(_search(target, draft).run([MiningProblem("p", PROMPT)]))
    assert result.initial_response_ids == [1, 1, 1, 1, 1, 2, EOS]
    assert result.mismatches == [Mismatch(1, 1, 3, important=False), Mismatch(3, 1, 3, important=True)]
    assert result.response_ids == [1, 3, 1, 1, 1, 2, EOS]  # the unimportant draft token stays
    assert result.answer == "2"
    assert draft.calls == 2  # initial predictions, then again after the unimportant swap
    assert result.generate_calls == 3


def test_problems_are_batched_into_one_engine_call_per_round():
    target, draft = Target(), Draft()
    problems = [MiningProblem(f"p{i}", PROMPT) for i in range(5)]
    results = list(_search(target, draft).run(problems))
    assert sorted(r.id for r in results) == [f"p{i}" for i in range(5)]
    assert max(target.calls) == 2  # pool of two problems per call
    assert all(len(r.mismatches) == 2 for r in results)


def test_total_length_cap_limits_continuations():
    target, draft = Target(), Draft()
    (result,) = list(_search(target, draft, cap=4).run([MiningProblem("p", PROMPT)]))
    assert len(result.initial_response_ids) == 4
    assert result.answer == "1"  # truncated: the last content token stands in for the answer
    assert result.mismatches == [Mismatch(1, 1, 3, important=False), Mismatch(3, 1, 3, important=True)]
    assert result.response_ids == [1, 3, 1, 1]


class EosDraft(Draft):
    """Proposes EOS at position 2: ending the response there loses the answer."""

    def predict(self, prompts, responses):
        self.calls += 1
        return [[EOS if i == 2 else r for i, r in enumerate(response)] for response in responses]


def test_draft_end_of_sequence_is_tested_without_generation():
    target, draft = Target(), EosDraft()
    (result,) = list(_search(target, draft).run([MiningProblem("p", PROMPT)]))
    assert result.mismatches == [Mismatch(2, 1, EOS, important=True)]
    assert result.response_ids == result.initial_response_ids


class SilentTarget(Target):
    def complete(self, response):
        return [EOS]


def test_problem_without_answer_has_no_labels():
    (result,) = list(_search(SilentTarget(), Draft()).run([MiningProblem("p", PROMPT)]))
    assert result.answer is None
    assert result.mismatches == []


# A code task: the answer is the sandboxed test report of the function the response completes.
WORDS = ["<eos>", "    return", " x", " *", " 2", "\n", " +"]
CODE_EOS = 0


class WordTokenizer:
    def decode(self, ids, skip_special_tokens=True):
        return "".join(WORDS[i] for i in ids if i != CODE_EOS)


def _ids(*words):
    return [WORDS.index(w) for w in words]


# x * 2 (the target's own), 2 * x (harmless rewording), 2 + x (changes the tests' outcome)
CODE_RESPONSES = [
    _ids("    return", " x", " *", " 2", "\n", "<eos>"),
    _ids("    return", " 2", " *", " x", "\n", "<eos>"),
    _ids("    return", " 2", " +", " x", "\n", "<eos>"),
]


class CodeTarget(Target):
    """Continues whichever scripted response the prefix starts."""

    def complete(self, response):
        for scripted in CODE_RESPONSES:
            if scripted[: len(response)] == list(response):
                return scripted
        raise AssertionError(f"unscripted prefix {response}")


class CodeDraft(Draft):
    """Proposes ' 2' for the first operand and ' +' for the operator; agrees elsewhere."""

    def predict(self, prompts, responses):
        self.calls += 1
        swaps = {1: _ids(" 2")[0], 2: _ids(" +")[0]}
        return [[swaps.get(p, token) for p, token in enumerate(response)] for response in responses]


def test_code_task_answers_are_sandboxed_test_reports():
    task = PyFuncTask(Path())
    example = task.example_from_row(
        {
            "id": "double",
            "prompt": "Return x doubled.\ndef double(x):\n",
            "tests": ["assert double(3) == 6", "assert double(0) == 0", "assert double(-2) == -4"],
            "entry_point": "double",
            "solution": "    return x * 2\n",
        },
        "train",
        0,
    )
    search = ImportantTokenSearch(task, WordTokenizer(), CodeTarget(), CodeDraft(), 10, {CODE_EOS}, 4)
    (result,) = list(search.run([MiningProblem("double", PROMPT, example)]))
    assert report_outcomes(result.answer) == ["pass", "pass", "pass"]
    # ' 2' for ' x' keeps every test passing (unimportant, kept); ' +' for ' *' then fails them
    assert result.mismatches == [
        Mismatch(1, _ids(" x")[0], _ids(" 2")[0], important=False),
        Mismatch(2, _ids(" *")[0], _ids(" +")[0], important=True),
    ]
    assert result.response_ids == CODE_RESPONSES[1]
    assert task.runner.runs == 3  # each distinct program ran once, in the sandbox
