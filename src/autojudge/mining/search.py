"""AutoJudge's Algorithm 1 (search for important tokens), run in rounds batched across problems.

For each problem: the target's response y, the draft's teacher-forced predictions ỹ, and the
answer α of y. Repeatedly take the earliest mismatch t after the last one tested, swap ỹ_t in,
let the target continue, and compare answers: equivalent -> unimportant, keep the swapped
response and recompute ỹ; different -> important, keep y_t. Every round makes one engine call
for all active problems, so the engine batches across problems.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the mined data set (stage merge) needs no model stack
    from transformers import PreTrainedTokenizerBase

    from autojudge.engines.base import GenerationEngine
    from autojudge.models.teacher_forced import TokenPredictor
    from autojudge.tasks.base import Example, Task


@dataclass(frozen=True)
class MiningProblem:
    """A problem to mine: its id, the token ids of its prompt and, for tasks that need it, its example."""

    id: str
    prompt_ids: list[int]
    example: Example | None = None  # code tasks: the tests whose report is the answer


@dataclass
class Mismatch:
    """One tested mismatch: at response position ``position`` the target had ``target_token``."""

    position: int
    target_token: int
    draft_token: int
    important: bool


@dataclass
class MinedProblem:
    """The outcome of Algorithm 1 on one problem."""

    id: str
    prompt_ids: list[int]
    response_ids: list[int]  # final response, after every unimportant swap
    initial_response_ids: list[int]  # the target's own greedy response
    answer: str | None
    mismatches: list[Mismatch] = field(default_factory=list)
    generate_calls: int = 1
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> MinedProblem:
        mismatches = [Mismatch(**m) for m in data.pop("mismatches")]
        return cls(**data, mismatches=mismatches)


@dataclass
class _State:
    """A problem being searched."""

    problem: MiningProblem
    response: list[int]
    initial: list[int]
    answer: str | None
    started: float
    cursor: int = -1  # mismatches at positions <= cursor are done
    predictions: list[int] | None = None  # draft predictions for the current response
    mismatches: list[Mismatch] = field(default_factory=list)
    calls: int = 1

    def next_mismatch(self) -> int | None:
        assert self.predictions is not None
        for position in range(self.cursor + 1, len(self.response)):
            if self.response[position] != self.predictions[position]:
                return position
        return None

    def result(self) -> MinedProblem:
        return MinedProblem(
            id=self.problem.id,
            prompt_ids=self.problem.prompt_ids,
            response_ids=self.response,
            initial_response_ids=self.initial,
            answer=self.answer,
            mismatches=self.mismatches,
            generate_calls=self.calls,
            seconds=time.perf_counter() - self.started,
        )


class ImportantTokenSearch:
    """Runs Algorithm 1 over a stream of problems with at most ``pool_size`` in flight."""

    def __init__(
        self,
        task: Task,
        tokenizer: PreTrainedTokenizerBase,
        engine: GenerationEngine,
        draft: TokenPredictor,
        max_response_tokens: int,
        eos_token_ids: set[int],
        pool_size: int = 64,
    ) -> None:
        self.task = task
        self.tokenizer = tokenizer
        self.engine = engine
        self.draft = draft
        self.max_response_tokens = max_response_tokens
        self.eos_token_ids = eos_token_ids
        self.pool_size = pool_size

    def _answers(self, problems: list[MiningProblem], responses: list[list[int]]) -> list[str | None]:
        """The answers of many responses at once (code tasks run their programs concurrently)."""
        texts = [self.tokenizer.decode(r, skip_special_tokens=True) for r in responses]
        examples = [p.example for p in problems]
        if any(e is None for e in examples):
            return [self.task.extract_answer(text) for text in texts]
        return self.task.extract_answers(texts, examples)

    def _start(self, problems: list[MiningProblem]) -> list[_State]:
        """Line 4-5: the target's response and its answer."""
        responses = self.engine.continue_prefixes(
            [p.prompt_ids for p in problems], [self.max_response_tokens] * len(problems)
        )
        answers = self._answers(problems, responses)
        now = time.perf_counter()
        return [
            _State(problem=p, response=r, initial=list(r), answer=a, started=now)
            for p, r, a in zip(problems, responses, answers, strict=True)
        ]

    def run(self, problems: list[MiningProblem]) -> Iterator[MinedProblem]:
        """Yield each problem's result as soon as its search ends (in no particular order)."""
        waiting = list(problems)
        active: list[_State] = []
        while waiting or active:
            if waiting and len(active) < self.pool_size:
                take, waiting = (
                    waiting[: self.pool_size - len(active)],
                    waiting[self.pool_size - len(active) :],
                )
                active.extend(self._start(take))
            stale = [s for s in active if s.predictions is None]
            if stale:  # lines 6 and 15: draft predictions over the current responses
                predictions = self.draft.predict(
                    [s.problem.prompt_ids for s in stale], [s.response for s in stale]
                )
                for state, predicted in zip(stale, predictions, strict=True):
                    state.predictions = predicted
            testing: list[tuple[_State, int]] = []
            still_active = []
            for state in active:
                position = state.next_mismatch() if state.answer is not None else None
                if position is None:  # no mismatch left (or no answer to preserve): done
                    yield state.result()
                else:
                    testing.append((state, position))
                    still_active.append(state)
            active = still_active
            if testing:
                self._test(testing)

    def _test(self, testing: list[tuple[_State, int]]) -> None:
        """Lines 9-19 for one mismatch of each problem, with one engine call."""
        prefixes, caps = [], []
        for state, position in testing:
            swapped = state.predictions[position]
            prefixes.append(state.problem.prompt_ids + state.response[:position] + [swapped])
            ends = swapped in self.eos_token_ids
            caps.append(0 if ends else self.max_response_tokens - position - 1)
        continuations = self.engine.continue_prefixes(prefixes, caps)
        candidates = [
            [*state.response[:position], state.predictions[position], *continuation]
            for (state, position), continuation in zip(testing, continuations, strict=True)
        ]
        answers = self._answers([state.problem for state, _ in testing], candidates)
        for (state, position), candidate, answer in zip(testing, candidates, answers, strict=True):
            target_token, draft_token = state.response[position], state.predictions[position]
            equivalent = self.task.equivalent(state.answer, answer)
            state.mismatches.append(Mismatch(position, target_token, draft_token, important=not equivalent))
            state.calls += 1
            state.cursor = position
            if equivalent:
                state.response = candidate
                state.predictions = None
