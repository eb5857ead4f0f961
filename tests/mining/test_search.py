"""Algorithm 1 on a scripted world: a fake target, draft and task whose answers depend on known positions."""

from autojudge.mining.search import ImportantTokenSearch, MiningProblem, Mismatch

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
