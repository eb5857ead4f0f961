"""Running a decoder over a task's examples: accuracy and speed counters, with a progress bar."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Protocol

from tqdm import tqdm
from transformers import PreTrainedTokenizerBase

from autojudge.decoding.generation import Generation
from autojudge.evaluation.stats import mean_of_first, paired_bootstrap, rate_of_first
from autojudge.models.prompts import encode_prompt
from autojudge.tasks.base import Example, Task


class Decoder(Protocol):
    def generate(self, prompt: list[int]) -> Generation: ...


@dataclass
class ExampleResult:
    """One decoded example."""

    id: str
    correct: bool
    answer: str | None
    tokens: int
    target_passes: int
    draft_passes: int
    accepted_mismatches: int
    seconds: float
    response_ids: list[int]


@dataclass
class EvalSummary:
    """Aggregate of one method over a set of examples."""

    method: str
    examples: int
    accuracy: float
    mat: float  # total generated tokens / total target forward passes
    tokens: int
    target_passes: int
    accepted_mismatches: int
    seconds: float

    def as_dict(self) -> dict:
        return asdict(self)


def summarize(method: str, results: list[ExampleResult]) -> EvalSummary:
    tokens = sum(r.tokens for r in results)
    passes = sum(r.target_passes for r in results)
    return EvalSummary(
        method=method,
        examples=len(results),
        accuracy=sum(r.correct for r in results) / len(results),
        mat=tokens / passes if passes else 0.0,
        tokens=tokens,
        target_passes=passes,
        accepted_mismatches=sum(r.accepted_mismatches for r in results),
        seconds=sum(r.seconds for r in results),
    )


def example_result(
    example: Example, generation: Generation, answer: str | None, correct: bool
) -> ExampleResult:
    """One decoded example with its extracted answer."""
    stats = generation.stats
    return ExampleResult(
        id=example.id,
        correct=correct,
        answer=answer,
        tokens=stats.tokens,
        target_passes=stats.target_passes,
        draft_passes=stats.draft_passes,
        accepted_mismatches=stats.accepted_mismatches,
        seconds=stats.seconds,
        response_ids=generation.tokens,
    )


def score(
    task: Task,
    examples: list[Example],
    generations: list[Generation],
    tokenizer: PreTrainedTokenizerBase,
    method: str,
) -> tuple[EvalSummary, list[ExampleResult]]:
    """Score generations already decoded (one per example, in order); code tasks run their programs
    concurrently, each distinct program once."""
    responses = [tokenizer.decode(g.tokens, skip_special_tokens=True) for g in generations]
    answers = task.extract_answers(responses, examples)
    results = [
        example_result(e, g, a, task.equivalent(a, e.answer))
        for e, g, a in zip(examples, generations, answers, strict=True)
    ]
    return summarize(method, results), results


def evaluate(
    task: Task,
    examples: list[Example],
    decoder: Decoder,
    tokenizer: PreTrainedTokenizerBase,
    method: str,
    chat_template: bool = False,
) -> tuple[EvalSummary, list[ExampleResult]]:
    """Decode every example, one at a time, and score it with the task."""
    results = []
    progress = tqdm(examples, desc=method, unit="problem", mininterval=2)
    for example in progress:
        generation = decoder.generate(encode_prompt(tokenizer, task.build_prompt(example), chat_template))
        answer = task.extract_answer_for(
            tokenizer.decode(generation.tokens, skip_special_tokens=True), example
        )
        results.append(example_result(example, generation, answer, task.equivalent(answer, example.answer)))
        progress.set_postfix(accuracy=f"{sum(r.correct for r in results) / len(results):.3f}", refresh=False)
    return summarize(method, results), results


def summary_intervals(results: list[ExampleResult], samples: int = 2000, seed: int = 0) -> dict[str, dict]:
    """95% bootstrap intervals over problems of one decoded split's accuracy and MAT (none for a
    decoder that made no target pass, the draft alone)."""
    correct = [float(r.correct) for r in results]
    figures = {"accuracy": paired_bootstrap(correct, correct, mean_of_first, samples, seed)}
    if sum(r.target_passes for r in results):
        rates = [(r.tokens, r.target_passes) for r in results]
        figures["mat"] = paired_bootstrap(rates, rates, rate_of_first, samples, seed)
    return {name: {"value": point, "low": low, "high": high} for name, (point, low, high) in figures.items()}
