"""One verification step, greedy or sampled, shared by the reference engines.

Greedy: a draft token is natively accepted when it is the target's argmax; the token after the
accepted prefix is the argmax (correction or bonus).

Sampled (temperature, top-p, seed), as vLLM's rejection sampler does it: the target's distribution p
is the *processed* one (logits / T, then the top-p nucleus; -inf outside). vLLM's draft_model
proposer drafts greedily for sampled requests too, so the draft distribution q is one-hot at the draft
token x and the standard test of speculative sampling, u <= min(1, p(x) / q(x)), is u <= p(x). At the
first rejection the correction is drawn from norm(max(0, p - q)), i.e. p without x; after a fully
accepted window the bonus token is drawn from p. A lossy rule adds acceptances: a position is
accepted when the standard test accepts it or the rule accepts it and p(x) > 0 (a token the target
cannot emit is never accepted). With the exact rule the output is distributed as sampling from the
target alone (``tests/decoding/test_sampling.py``).

The distribution shift a lossy rule causes at a position of a lossless trajectory: lossless, the
next token is distributed as p; lossy, x gains the probability (1 - p(x)) * a, where a is the chance
the rule accepts x once the standard test rejected it, taken from the other tokens. Their total
variation is (1 - p(x)) * a; ``Verdict.shifts`` sums it over the cycle's positions for rules that are
only observed (a lossless run measures what each lossy rule would change, along its own trajectory).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from autojudge.errors import InputError
from autojudge.rules.acceptance import AcceptanceRule, Window
from autojudge.rules.verdict import greedy_choice
from autojudge.rules.verification import accepted_count, rejected_mass, standard_test, tempered_draft_logits


@dataclass(frozen=True)
class Sampling:
    """A sampled request's settings (vLLM's names): temperature > 0, top-p nucleus, seed."""

    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.temperature > 0:
            raise InputError(f"sampling temperature must be > 0 (0 is greedy), got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise InputError(f"sampling top_p must be in (0, 1], got {self.top_p}")

    def process(self, logits: torch.Tensor) -> torch.Tensor:
        """Processed logits [..., V]: divided by the temperature, -inf outside the top-p nucleus (the
        smallest set of most likely tokens whose probability reaches top_p; at least one token)."""
        scaled = logits.float() / self.temperature
        if self.top_p >= 1:
            return scaled
        ascending, order = scaled.sort(dim=-1)
        outside = ascending.softmax(dim=-1).cumsum(dim=-1) <= 1 - self.top_p
        outside[..., -1] = False
        return scaled.masked_fill(outside.scatter(-1, order, outside), float("-inf"))

    def generator(self) -> torch.Generator:
        return torch.Generator().manual_seed(self.seed)


@dataclass
class Verdict:
    """One verification step's outcome."""

    accepted: int  # leading draft tokens accepted
    mismatches: int  # of them, tokens lossless verification rejects (lossy accepts)
    follow: int  # the correction (at the first rejection) or the bonus token
    shifts: list[float] = field(default_factory=list)  # per observed rule: summed total variation


def _draw(probs: torch.Tensor, generator: torch.Generator | None, excluded: int | None = None) -> int:
    if excluded is not None and float(probs[excluded]) < 1.0:
        probs = probs.clone()
        probs[excluded] = 0.0
    return int(torch.multinomial(probs.double().cpu(), 1, generator=generator))


def verify(
    rule: AcceptanceRule,
    target_logits: torch.Tensor,  # [count + 1, V] raw: row i scores draft i's slot, row count the bonus
    draft_tokens: list[int],
    draft_logits: torch.Tensor | None,  # [count, V] raw
    target_hidden: torch.Tensor | None,  # [count, H]
    draft_hidden: torch.Tensor | None = None,
    sampling: Sampling | None = None,
    generator: torch.Generator | None = None,
    observed: tuple[AcceptanceRule, ...] = (),
    context_hidden: torch.Tensor | None = None,  # [count, H] target state that predicted each slot
) -> Verdict:
    """Verify ``draft_tokens`` with ``rule`` (greedy, or sampled with ``generator``'s draws)."""
    count = len(draft_tokens)
    scores = target_logits if sampling is None else sampling.process(target_logits)
    probs = None if sampling is None else torch.softmax(scores, dim=-1)
    accepted, mismatches, shifts = 0, 0, [0.0] * len(observed)
    draft = torch.tensor(draft_tokens, dtype=torch.long, device=scores.device)
    if count:
        native, target_prob = None, None
        if probs is not None:  # the uniforms as vLLM draws a seeded request's: one per draft, float64
            uniform = torch.rand(count, generator=generator, dtype=torch.float64).to(scores.device)
            native, target_prob = standard_test(draft, probs[:count], uniform)
            temperature = torch.full((count,), sampling.temperature, device=scores.device)
            draft_logits = tempered_draft_logits(draft_logits, temperature)
        window = Window(
            draft, scores[:count], draft_logits, target_hidden, draft_hidden, context_hidden, native=native
        )
        accepted, mismatches = accepted_count(rule, window, target_prob)
        if observed:
            shifts = _shifts(observed, window, probs, accepted)
    if probs is None:
        follow = int(greedy_choice(scores[accepted]))
    else:
        follow = _draw(probs[accepted], generator, int(draft[accepted]) if accepted < count else None)
    return Verdict(accepted, mismatches, follow, shifts)


def _shifts(
    observed: tuple[AcceptanceRule, ...], window: Window, probs: torch.Tensor | None, accepted: int
) -> list[float]:
    """Per observed rule: the total variation it would add, summed over the positions this cycle decided
    (its accepted prefix and the first rejection)."""
    decided = min(accepted + 1, window.draft_tokens.shape[0])
    rejected = rejected_mass(window, probs)[:decided]
    return [
        float((rejected * rule.acceptance_probability(window)[:decided].double()).sum()) for rule in observed
    ]
