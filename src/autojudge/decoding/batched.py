"""Batched reference decoding: many requests, each with its own acceptance rule, decoded together.

Each request runs speculative decoding with its rule (``decoding.speculative`` describes the cycle; it is
this engine with one row) or, without a rule, greedy decoding with the model alone (the first token from
the prompt's pass alone, as vLLM's prefill); the rows of a batch
share every forward pass, so on small models the cost per token is the batch's, not one sequence's
(one draft step of a 2.5M-parameter model costs about as much for 128 rows as for one). Finished rows
leave the batch and waiting requests join it (continuous batching). A row's tokens can differ from
a one-row batch's only where float rounding of a batched matrix product flips a near-tied argmax;
``tests/decoding/test_batched.py`` cross-checks the two.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

import torch
from tqdm import tqdm
from transformers import PreTrainedModel

from autojudge.decoding.generation import DecodeStats, Generation, Hook, clip_at_stop
from autojudge.decoding.sampling import Sampling, verify
from autojudge.decoding.slots import SlotCache
from autojudge.errors import InputError
from autojudge.rules.acceptance import AcceptanceRule, ExactMatch


@dataclass
class Request:
    """One prompt to decode; ``rule`` None: the model alone (one token per forward pass). Greedy, or
    sampled with ``sampling`` (its seed); ``observed`` rules are not applied, their distribution shift
    along this request's trajectory is measured (``DecodeStats.shifts``)."""

    prompt: list[int]
    rule: AcceptanceRule | None = None
    sampling: Sampling | None = None
    observed: tuple[AcceptanceRule, ...] = ()


@dataclass
class _Row:
    """A request being decoded."""

    index: int  # position in the caller's list
    request: Request
    sequence: list[int]  # prompt and generated tokens
    generator: torch.Generator | None = None  # a sampled request's draws
    generated: list[int] = field(default_factory=list)
    stats: DecodeStats = field(default_factory=DecodeStats)
    finished: bool = False  # ended with an end-of-sequence token
    done: bool = False


@dataclass
class _Proposals:
    """What the draft produced for the batch in one cycle."""

    tokens: list[list[int]]  # per row
    logits: torch.Tensor | None  # [B, steps, V]
    hidden: torch.Tensor | None  # [B, steps, Hd], when a row's rule reads draft states


_ALONE = ExactMatch()  # verifies nothing: a request without a rule drafts no token


class BatchedDecoder:
    """Decodes a list of requests in batches of up to ``batch_size`` rows."""

    def __init__(
        self,
        model: PreTrainedModel,
        draft: PreTrainedModel | None,
        vocab_size: int,
        eos_ids: set[int],
        window: int,
        max_new_tokens: int,
        batch_size: int = 128,
        role: str = "target",
    ) -> None:
        if role not in ("target", "draft"):
            raise ValueError(f"role must be 'target' or 'draft', got {role!r}")
        if batch_size < 1 or window < 1:
            raise ValueError(f"batch size and window must be at least 1, got {batch_size} and {window}")
        if not all(isinstance(m, PreTrainedModel) for m in (model, draft) if m is not None):
            raise InputError(
                "the reference engine decodes with causal LMs only: a pair drafting with an EAGLE head "
                "(pair.proposer eagle) decodes on vLLM (decoding.engine: vllm)"
            )
        self.model, self.draft = model, draft
        self.vocab_size = vocab_size
        self.eos_ids = eos_ids
        self.window = window
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.role = role

    @torch.inference_mode()
    def generate(
        self,
        requests: list[Request],
        desc: str = "decoding",
        progress: bool = True,
        on_finished: Hook | None = None,
    ) -> list[Generation]:
        """Decode every request; generations in the requests' order (``progress``: a progress bar).

        ``on_finished`` sees the (index, generation) of the requests that finished in each cycle and may
        name requests to drop: waiting ones are never decoded, running ones stop where they are (their
        generations come back partial or empty; the caller that dropped them ignores them)."""
        if self.draft is None and any(r.rule is not None for r in requests):
            raise ValueError("requests with an acceptance rule need a draft model")
        queue = deque(
            _Row(i, r, list(r.prompt), r.sampling and r.sampling.generator()) for i, r in enumerate(requests)
        )
        active: list[_Row] = []
        target = SlotCache(self.model, self.vocab_size, 0)
        draft = self.draft and SlotCache(self.draft, self.vocab_size, 0)
        results: dict[int, Generation] = {}
        with tqdm(total=len(requests), desc=desc, unit="problem", mininterval=2, disable=not progress) as bar:
            while queue or active:
                started = time.perf_counter()
                if queue and len(active) <= 3 * self.batch_size // 4:
                    joining = [queue.popleft() for _ in range(min(len(queue), self.batch_size - len(active)))]
                    self._join(joining, target, draft)
                    active += joining
                self._cycle(active, target, draft)
                share = (time.perf_counter() - started) / len(active)
                for row in active:
                    row.stats.seconds += share
                finished = {row.index: self._generation(row) for row in active if row.done}
                dropped = set(on_finished(list(finished.items()))) if on_finished and finished else set()
                if dropped:
                    for row in queue:
                        if row.index in dropped:
                            results[row.index] = Generation([])
                    queue = deque(row for row in queue if row.index not in dropped)
                    for row in active:
                        if row.index in dropped and not row.done:
                            row.done, finished[row.index] = True, self._generation(row)
                results.update(finished)
                bar.update(len(results) - bar.n)
                staying = [b for b, row in enumerate(active) if not row.done]
                if len(staying) < len(active):
                    active = [active[b] for b in staying]
                    for cache in (target, draft):
                        if cache is not None:
                            cache.select(staying)
                for cache in (target, draft):
                    if cache is not None:
                        cache.compact()
        return [results[i] for i in range(len(requests))]

    def _join(self, rows: list[_Row], target: SlotCache, draft: SlotCache | None) -> None:
        """Cache every new row's prompt but its last token (the first cycle feeds that one)."""
        for cache in (target, draft):
            if cache is None:
                continue
            fresh = SlotCache(cache.model, self.vocab_size, len(rows))
            if any(len(row.sequence) > 1 for row in rows):
                fresh.forward([row.sequence[:-1] for row in rows], all_logits=False)
            cache.extend(fresh)

    def _counts(self, active: list[_Row]) -> list[int]:
        """Draft tokens each row proposes this cycle (0: greedy with the model alone, the prompt's pass,
        or no room left)."""
        return [
            0
            if row.request.rule is None or not row.generated
            else min(self.window, self.max_new_tokens - len(row.generated) - 1)
            for row in active
        ]

    def _propose(self, active: list[_Row], counts: list[int], draft: SlotCache) -> _Proposals:
        """Every row drafts greedily for the longest row's count; rows keep their own count's worth."""
        steps = max(counts)
        with_hidden = any(
            c and row.request.rule.needs_draft_hidden for row, c in zip(active, counts, strict=True)
        )
        tokens: list[list[int]] = [[] for _ in active]
        if not steps:
            return _Proposals(tokens, None, None)
        pending = [row.sequence[draft.lengths[b] :] for b, row in enumerate(active)]
        logit_steps, hidden_steps = [], []
        for step in range(steps + with_hidden):
            hidden, logits = draft.forward(pending, all_logits=False)
            if step:
                hidden_steps.append(hidden[:, 0])  # state encoding the previous draft token
            if step < steps:
                chosen = logits.argmax(dim=-1).tolist()
                for row_tokens, token in zip(tokens, chosen, strict=True):
                    row_tokens.append(token)
                logit_steps.append(logits)
                pending = [[token] for token in chosen]
        hidden_rows = torch.stack(hidden_steps, dim=1) if with_hidden else None
        return _Proposals(tokens, torch.stack(logit_steps, dim=1), hidden_rows)

    def _cycle(self, active: list[_Row], target: SlotCache, draft: SlotCache | None) -> None:
        """One draft-then-verify cycle of every active row."""
        counts = self._counts(active)
        if draft is None:
            proposals = _Proposals([[] for _ in active], None, None)
        else:
            proposals = self._propose(active, counts, draft)
        pending = [row.sequence[target.lengths[b] :] for b, row in enumerate(active)]
        inputs = [p + proposals.tokens[b][: counts[b]] for b, p in enumerate(pending)]
        hidden, logits = target.forward(inputs)
        target_lengths, draft_lengths = [], []
        for b, row in enumerate(active):
            first, count = len(pending[b]) - 1, counts[b]  # row first+i predicts the token after draft i
            request = row.request
            verdict = verify(
                request.rule or _ALONE,
                logits[b, first : first + count + 1],
                proposals.tokens[b][:count],
                None if proposals.logits is None else proposals.logits[b, :count],
                hidden[b, first + 1 : first + 1 + count],
                None if proposals.hidden is None else proposals.hidden[b, :count],
                request.sampling,
                row.generator,
                request.observed if count else (),
                hidden[b, first : first + count],
            )
            accepted = verdict.accepted
            budget = self.max_new_tokens - len(row.generated)
            new_tokens, row.finished = clip_at_stop(
                [*proposals.tokens[b][:accepted], verdict.follow], self.eos_ids, budget
            )
            base = len(row.sequence)
            row.stats.accepted_draft_tokens += min(accepted, len(new_tokens))
            row.stats.accepted_mismatches += verdict.mismatches
            row.stats.add_shifts(verdict.shifts)
            row.stats.draft_passes += count + bool(count and request.rule.needs_draft_hidden)
            row.stats.target_passes += 1
            row.generated += new_tokens
            row.sequence += new_tokens
            row.done = row.finished or len(row.generated) >= self.max_new_tokens
            target_lengths.append(base + accepted)
            if draft is not None:
                draft_lengths.append(min(draft.lengths[b], base + accepted))
        target.truncate(target_lengths)
        if draft is not None:
            draft.truncate(draft_lengths)

    def _generation(self, row: _Row) -> Generation:
        stats = row.stats
        stats.tokens = len(row.generated)
        if self.role == "draft":  # the draft alone: its passes are draft passes
            stats.draft_passes, stats.target_passes = stats.target_passes, 0
        return Generation(tokens=row.generated, stats=stats, finished=row.finished)
