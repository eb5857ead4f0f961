"""A randomized property test of the patched ``rejection_sample`` against vLLM's own, unpatched function (real
vLLM CPU build, no engine). Random batches mix greedy and sampled requests, seeded and unseeded, requests
without drafts and requests the drafter skipped (zero-filled placeholders), with or without the drafter's
probabilities. With rule ``exact`` the plugin emits vLLM's tokens bit for bit; with a lossy rule every draft
vLLM accepts is accepted, and every extra acceptance is one the rule asked for and the target can emit."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from autojudge.rules.acceptance import AcceptanceRule, ExactMatch, TopK, Window
from autojudge.vllm_plugin.step import ACTIVE, StepContext

V = 24
SEEDS = range(16)


class RandomMask(AcceptanceRule):
    """A fake rule for pure logic: accepts the mismatches a fixed random mask names."""

    name = "random-mask"

    def __init__(self, mask: torch.Tensor) -> None:
        self.mask = mask

    def accept_mismatch(self, window: Window) -> torch.Tensor:
        return self.mask.clone()


@dataclass
class Batch:
    arguments: dict  # rejection_sample's arguments, as RejectionSampler.forward passes them
    drafted: torch.Tensor  # [N] bool: the drafter produced the row this step
    rows_of: list[range]  # each request's flat rows


def random_batch(seed: int) -> Batch:
    """One step's random arguments; the logits are processed (a few -inf entries: constrained tokens)."""
    from vllm.v1.sample.logits_processor import LogitsProcessors
    from vllm.v1.sample.metadata import SamplingMetadata

    rng = torch.Generator().manual_seed(seed)
    size = int(torch.randint(1, 6, (1,), generator=rng))
    width = int(torch.randint(1, 5, (1,), generator=rng))
    drafts = torch.randint(0, width + 1, (size,), generator=rng).tolist()
    greedy = torch.rand(size, generator=rng) < 0.4
    temperature = torch.where(greedy, 0.0, 0.3 + torch.rand(size, generator=rng))
    skipped = torch.rand(size, generator=rng) < 0.2
    rows = sum(drafts)
    logits = 2.5 * torch.randn(rows, V, generator=rng)
    logits[torch.rand(rows, V, generator=rng) < 0.1] = float("-inf")
    logits[:, 0] = 0.0  # every row can emit something
    likely = logits.topk(2, dim=-1).indices
    pick = torch.randint(0, 3, (rows,), generator=rng)
    draft = torch.where(pick < 2, likely.gather(1, pick.clamp(max=1).unsqueeze(1)).squeeze(1), 0)
    draft = torch.where(pick == 2, torch.randint(0, V, (rows,), generator=rng), draft)
    starts = [sum(drafts[:b]) for b in range(size)]
    rows_of = [range(start, start + count) for start, count in zip(starts, drafts, strict=True)]
    drafted = torch.ones(rows, dtype=torch.bool)
    for b in torch.nonzero(skipped).flatten().tolist():
        draft[rows_of[b].start : rows_of[b].stop] = 0  # vLLM verifies zero-filled placeholders
        drafted[rows_of[b].start : rows_of[b].stop] = False
    draft_probs = None
    if seed % 2:
        draft_probs = torch.softmax(torch.randn(rows, V, generator=rng), dim=-1).contiguous()
    seeded = (torch.rand(size, generator=rng) < 0.5).tolist()
    generators = {b: torch.Generator().manual_seed(seed * 10 + b) for b in range(size) if seeded[b]}
    metadata = SamplingMetadata(
        temperature=temperature, all_greedy=bool(greedy.all()), all_random=bool((~greedy).all()),
        top_p=None, top_k=None, generators=generators, max_num_logprobs=None, no_penalties=True,
        prompt_token_ids=None, frequency_penalties=torch.zeros(size), presence_penalties=torch.zeros(size),
        repetition_penalties=torch.ones(size), output_token_ids=[[] for _ in range(size)],
        allowed_token_ids_mask=None, bad_words_token_ids={}, logitsprocs=LogitsProcessors(),
    )  # fmt: skip
    arguments = {
        "draft_token_ids": draft.to(torch.int32).contiguous(),
        "num_draft_tokens": drafts,
        "max_spec_len": width,
        "cu_num_draft_tokens": torch.tensor(drafts).cumsum(0).to(torch.int32),
        "draft_probs": draft_probs,
        "target_logits": logits.contiguous(),
        "bonus_token_ids": torch.randint(0, V, (size, 1), generator=rng, dtype=torch.int32),
        "sampling_metadata": metadata,
    }
    return Batch(arguments, drafted, rows_of)


def fresh(batch: Batch) -> dict:
    """A copy of the batch's arguments (vLLM's kernels write into their inputs), its generators restarted
    and the global generator seeded as for every run (unseeded requests draw from it)."""
    arguments = {
        key: value.clone() if isinstance(value, torch.Tensor) else value
        for key, value in batch.arguments.items()
    }
    arguments["sampling_metadata"].generators = {
        b: torch.Generator().manual_seed(g.initial_seed())
        for b, g in arguments["sampling_metadata"].generators.items()
    }
    torch.manual_seed(1)
    return arguments


def natively_accepted(module, batch: Batch) -> torch.Tensor:
    """[N] bool: lossless verification's verdict on every row, from the uniforms vLLM draws first in a step
    (greedy rows: the draft is the target's argmax; sampled rows: u <= p(x) / q(x))."""
    arguments = fresh(batch)
    metadata, draft = arguments["sampling_metadata"], arguments["draft_token_ids"].long()
    logits = arguments["target_logits"]
    greedy = logits.argmax(dim=-1) == draft
    if metadata.all_greedy:
        return greedy
    uniform = module.generate_uniform_probs(
        draft.shape[0], arguments["num_draft_tokens"], metadata.generators, "cpu"
    )
    p = logits.softmax(dim=-1).gather(1, draft.unsqueeze(1)).squeeze(1)
    q = (
        torch.ones_like(p)
        if arguments["draft_probs"] is None
        else arguments["draft_probs"].gather(1, draft.unsqueeze(1)).squeeze(1)
    )
    rows = torch.repeat_interleave(metadata.temperature, torch.tensor(arguments["num_draft_tokens"]))
    return torch.where(rows == 0, greedy, (q > 0) & (p / q >= uniform.float()))


def run(function, batch: Batch, rule: AcceptanceRule | None = None) -> tuple[torch.Tensor, list[int] | None]:
    """``function`` on a fresh copy of the batch, decided by ``rule`` (None: no step open); the output and
    the lossy accepts per request the step leaves for the plugin's counters."""
    arguments = fresh(batch)
    context = None
    if rule is not None:
        rows = batch.drafted.shape[0]
        context = StepContext([rule], None, torch.zeros(rows, 4), torch.zeros(rows, 4), None, batch.drafted)
    token = ACTIVE.set(context)
    try:
        out = function(**arguments)
    finally:
        ACTIVE.reset(token)
    return out, None if context is None else context.lossy.tolist()


def accepted_counts(out: torch.Tensor, batch: Batch) -> list[int]:
    """Per request, how many of its drafts the output emits (its leading accepted drafts)."""
    draft = batch.arguments["draft_token_ids"].tolist()
    counts = []
    for b, rows in enumerate(batch.rows_of):
        count = 0
        while count < len(rows) and int(out[b, count]) == draft[rows[count]] and int(out[b, count + 1]) != -1:
            count += 1
        counts.append(count)
    return counts


@pytest.mark.parametrize("seed", SEEDS)
def test_with_rule_exact_the_plugin_emits_vllms_tokens(sampler, seed):
    module, original = sampler
    batch = random_batch(seed)
    plugin, lossy = run(module.rejection_sample, batch, ExactMatch())
    assert torch.equal(plugin, run(original, batch)[0])
    assert lossy == [0] * len(batch.rows_of)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", ["topk", "mask"])
def test_a_lossy_rule_accepts_what_vllm_accepts_and_only_what_it_asked_for_beyond(sampler, seed, kind):
    module, original = sampler
    batch = random_batch(seed)
    rows = batch.drafted.shape[0]
    mask = torch.rand(rows, generator=torch.Generator().manual_seed(seed)) < 0.6
    rule = TopK(1 + seed % 4) if kind == "topk" else RandomMask(mask)
    (stock, _), (plugin, lossy) = run(original, batch), run(module.rejection_sample, batch, rule)
    logits, draft = batch.arguments["target_logits"], batch.arguments["draft_token_ids"]
    asked = rule.accept_mismatch(Window(draft, logits, None, torch.zeros(rows, 4)))
    emittable = torch.isfinite(logits.gather(1, draft.long().unsqueeze(1)).squeeze(1))
    theirs, ours = accepted_counts(stock, batch), accepted_counts(plugin, batch)
    native = natively_accepted(module, batch)
    for b, request_rows in enumerate(batch.rows_of):
        assert ours[b] >= theirs[b]
        assert torch.equal(plugin[b, : theirs[b]], stock[b, : theirs[b]])
        for n in request_rows[theirs[b] : ours[b]]:  # the extra acceptances: asked for, or native
            assert (asked[n] and emittable[n] and batch.drafted[n]) or native[n]
        if ours[b] > theirs[b]:  # the first of them is the rule's own
            assert asked[request_rows[theirs[b]]] and not native[request_rows[theirs[b]]]
        assert lossy[b] == sum(not native[n] for n in request_rows[: ours[b]])  # the counters' count
        if ours[b] == theirs[b]:
            assert torch.equal(plugin[b], stock[b])  # same uniforms, same recovered and bonus tokens
