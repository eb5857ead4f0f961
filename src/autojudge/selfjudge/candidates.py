"""The mismatches SelfJudge scores: from mined rows, or from the target's responses alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from autojudge.engines.base import GenerationEngine
from autojudge.errors import InputError
from autojudge.selfjudge.score import Replacement

if TYPE_CHECKING:
    from autojudge.models.teacher_forced import TokenPredictor


@dataclass(frozen=True)
class Candidate:
    """A mismatch at ``position`` of problem ``problem_id``'s response, ready to score."""

    problem_id: str
    position: int
    replacement: Replacement


def from_mined_rows(
    rows: list[dict], engine: GenerationEngine, n_next: int, max_response_tokens: int, eos_token_ids: set[int]
) -> list[Candidate]:
    """Mined mismatches (prompt, response, position, tokens); y's suffix is the target's greedy continuation.

    The mined response before ``position`` is the context the mismatch was found in; after it
    the response may hold later swaps, so the next ``n_next`` tokens after y are generated again.
    """
    if n_next < 0:
        raise InputError(f"selfjudge n_next must be >= 0, got {n_next}")
    prefixes, caps = [], []
    for row in rows:
        prefixes.append([*row["prompt_ids"], *row["response_ids"][: row["position"]], row["target_token"]])
        room = max_response_tokens - row["position"] - 1
        caps.append(0 if row["target_token"] in eos_token_ids else max(0, min(n_next, room)))
    suffixes = engine.continue_prefixes(prefixes, caps)
    return [
        Candidate(
            row["problem_id"],
            row["position"],
            Replacement(prefix[:-1], row["target_token"], row["draft_token"], suffix),
        )
        for row, prefix, suffix in zip(rows, prefixes, suffixes, strict=True)
    ]


def from_responses(
    problem_ids: list[str],
    prompts: list[list[int]],
    responses: list[list[int]],
    draft: TokenPredictor,
    n_next: int,
) -> list[Candidate]:
    """SelfJudge step 1 on the target's own responses: every position where the draft's choice differs.

    Needs no answers: the suffix is the response's next ``n_next`` tokens (fewer near its end).
    """
    if n_next < 0:
        raise InputError(f"selfjudge n_next must be >= 0, got {n_next}")
    predictions = draft.predict(prompts, responses)
    return [
        Candidate(
            problem_id,
            position,
            Replacement(
                [*prompt, *response[:position]], token, predicted[position], response[position + 1 :][:n_next]
            ),
        )
        for problem_id, prompt, response, predicted in zip(
            problem_ids, prompts, responses, predictions, strict=True
        )
        for position, token in enumerate(response)
        if predicted[position] != token
    ]
