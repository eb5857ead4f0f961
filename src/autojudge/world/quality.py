"""The quality figures the toy pair must meet: target/draft greedy accuracy and their agreement."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from autojudge.decoding.factory import draft_only, target_only
from autojudge.evaluation.scoring import ExampleResult, evaluate
from autojudge.models.distill import agreement
from autojudge.models.pair import ModelPair
from autojudge.models.prompts import encode_prompt
from autojudge.params import ToyParams
from autojudge.tasks.base import Example, Task
from autojudge.world.corpus import SPLITS, held_out_problems, mixture_sources

BOUNDS = {
    "target_accuracy": (0.85, 1.0),
    "draft_accuracy": (0.20, 0.80),
    "teacher_forced_agreement": (0.70, 0.95),
}


@dataclass
class PairQuality:
    examples: int
    target_accuracy: float
    draft_accuracy: float
    teacher_forced_agreement: float  # draft argmax == target greedy token, over the target's responses
    mean_response_tokens: float

    def failures(self) -> list[str]:
        """The figures outside their required bounds."""
        return [
            f"{name} = {getattr(self, name):.3f} not in [{low}, {high}]"
            for name, (low, high) in BOUNDS.items()
            if not low <= getattr(self, name) <= high
        ]

    def as_dict(self) -> dict:
        return asdict(self)


def measure_pair(
    pair: ModelPair, task: Task, examples: list[Example], max_new_tokens: int
) -> tuple[PairQuality, list[ExampleResult]]:
    """Greedy accuracy of both models and the draft's teacher-forced agreement with the target."""
    target_summary, target_results = evaluate(
        task, examples, target_only(pair, max_new_tokens), pair.tokenizer, "target greedy"
    )
    draft_summary, _ = evaluate(
        task, examples, draft_only(pair, max_new_tokens), pair.tokenizer, "draft greedy"
    )
    prompts = [encode_prompt(pair.tokenizer, task.build_prompt(e)) for e in examples]
    responses = [r.response_ids for r in target_results]
    total = sum(len(response) for response in responses)
    agree = agreement(
        pair.draft, pair.vocab_size, pair.pad_token_id, list(zip(prompts, responses, strict=True))
    )
    quality = PairQuality(
        examples=len(examples),
        target_accuracy=target_summary.accuracy,
        draft_accuracy=draft_summary.accuracy,
        teacher_forced_agreement=agree,
        mean_response_tokens=total / len(examples),
    )
    return quality, target_results


def measure_sources(pair: ModelPair, toy: ToyParams, max_new_tokens: int) -> dict[str, dict]:
    """The quality figures on the test split of every source of the toy corpus, with their bound checks."""
    figures = {}
    for source in mixture_sources(toy):
        problems = held_out_problems(toy, source, "test")
        quality, _ = measure_pair(pair, problems.task, problems.examples, max_new_tokens)
        failures = quality.failures()
        figures[source] = {
            "split": SPLITS["test"][source],
            **quality.as_dict(),
            "within_bounds": not failures,
            "failures": failures,
        }
    return figures
