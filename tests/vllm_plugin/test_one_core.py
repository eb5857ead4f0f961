"""One verification core, two paths: for every registered rule, random batches mixing greedy and sampled
requests are verified by the reference engines' step (``decoding.sampling.verify``, one request at a time,
drawing its uniforms from the request's seed) and by the plugin (vLLM's real ``rejection_sample`` on the CPU
build, with the patch installed and the same seeds). Both accept the same positions and count the same lossy
accepts per request; greedy requests emit the same tokens. Sampled correction and bonus tokens are vLLM's own
and not compared.

Ties: the core compares u <= p(x) in float32, as vLLM's CPU kernel does, so the two paths agree even where u
rounds to p(x); the plugin hands vLLM u = 0 on every row the rule accepts, so no tie can undo an acceptance.
"""

from __future__ import annotations

import pytest
import torch
from rule_settings import HALFWAY_KEYS

from autojudge.decoding.sampling import Sampling, verify
from autojudge.features.spec import FeatureSpec
from autojudge.heads.artifact import JudgeHead
from autojudge.rules.build import build_rule
from autojudge.rules.config import RULES, RuleConfig
from autojudge.vllm_plugin.patches import patch_expand_batch_to_tokens, patch_rejection_sample
from autojudge.vllm_plugin.step import ACTIVE, StepContext

V, H, K = 24, 8, 4
BATCHES = 6
TEMPERATURES = [0.8, 0.0, 1.3, 0.0, 1.0]  # requests 0, 2, 4 sampled (seeded), 1, 3 greedy


def _rule(name: str):
    keys = HALFWAY_KEYS.get(name.removesuffix("-published"), {})
    head = JudgeHead(torch.randn(H, generator=torch.Generator().manual_seed(7)), 0.0, 0.5,
                     FeatureSpec("target", H, 0), "pair", "task", "hash")  # fmt: skip
    return build_rule(RuleConfig(name, **keys), K, head)


@pytest.fixture(scope="module")
def rejection_sample():
    """vLLM's rejection_sample with the plugin's patch, as a CPU judge runner installs it."""
    from vllm.platforms.cpu import CpuPlatform
    from vllm.v1.sample import rejection_sampler as module

    CpuPlatform.register_triton_kernel_overrides()
    patch_expand_batch_to_tokens("cpu")
    patch_rejection_sample()
    return module.rejection_sample


def _batch(seed: int) -> dict:
    """Random requests: raw target and draft logits (the draft a noisy target), drafts drawn among the
    target's three likeliest tokens (so every rule meets matches and mismatches), now and then a token a
    constraint forbids (-inf processed logit)."""
    g = torch.Generator().manual_seed(seed)
    counts = torch.randint(1, K + 1, (len(TEMPERATURES),), generator=g).tolist()
    requests = []
    for count in counts:
        target = 2.5 * torch.randn(count + 1, V, generator=g)  # row ``count``: the bonus position
        draft_logits = target[:count] + torch.randn(count, V, generator=g)
        choice = torch.randint(0, 3, (count,), generator=g)
        drafts = target[:count].topk(3, dim=-1).indices.gather(1, choice.unsqueeze(1)).squeeze(1)
        forbidden = torch.rand(count, generator=g) < 0.1
        target[:count][forbidden, drafts[forbidden]] = float("-inf")
        requests.append((target, drafts, draft_logits, torch.randn(count, H, generator=g)))
    return {"requests": requests, "seeds": [1000 * seed + b for b in range(len(counts))]}


def _reference(rule, batch: dict) -> tuple[list[list[int]], list[int]]:
    """Each request's accepted drafts and following token, verified alone as the reference engines do, and
    its lossy accepts."""
    out, lossy = [], []
    for (target, drafts, draft_logits, hidden), temperature, seed in zip(
        batch["requests"], TEMPERATURES, batch["seeds"], strict=True
    ):
        sampling = Sampling(temperature=temperature, seed=seed) if temperature > 0 else None
        generator = sampling.generator() if sampling else None
        verdict = verify(rule, target, drafts.tolist(), draft_logits, hidden, None, sampling, generator)
        out.append([*drafts[: verdict.accepted].tolist(), verdict.follow])
        lossy.append(verdict.mismatches)
    return out, lossy


def _plugin(rejection_sample, rule, batch: dict) -> tuple[list[list[int]], list[int]]:
    """The same requests as one vLLM step: processed logits, seeded generators, the rule's step open; and
    the lossy accepts per request the step left for the counters."""
    from vllm.v1.sample.logits_processor import LogitsProcessors
    from vllm.v1.sample.metadata import SamplingMetadata

    requests, n = batch["requests"], len(TEMPERATURES)
    temperature = torch.tensor(TEMPERATURES)
    counts = [len(drafts) for _, drafts, _, _ in requests]
    scale = [t if t > 0 else 1.0 for t in TEMPERATURES]
    metadata = SamplingMetadata(
        temperature=temperature, all_greedy=False, all_random=False, top_p=None, top_k=None,
        generators={b: torch.Generator().manual_seed(s) for b, s in enumerate(batch["seeds"]) if TEMPERATURES[b]},
        max_num_logprobs=None, no_penalties=True, prompt_token_ids=None, frequency_penalties=torch.zeros(n),
        presence_penalties=torch.zeros(n), repetition_penalties=torch.ones(n), output_token_ids=[[]] * n,
        allowed_token_ids_mask=None, bad_words_token_ids={}, logitsprocs=LogitsProcessors(),
    )  # fmt: skip
    context = StepContext(
        [rule],
        None,
        torch.cat([hidden for *_, hidden in requests]),
        torch.zeros_like(torch.cat([hidden for *_, hidden in requests])),  # the head reads token states only
        torch.cat([draft_logits for _, _, draft_logits, _ in requests]),
        torch.ones(sum(counts), dtype=torch.bool),
    )
    token = ACTIVE.set(context)
    try:
        out = rejection_sample(
            draft_token_ids=torch.cat([drafts for _, drafts, _, _ in requests]).to(torch.int32),
            num_draft_tokens=counts,
            max_spec_len=max(counts),
            cu_num_draft_tokens=torch.tensor(counts).cumsum(0).to(torch.int32),
            draft_probs=None,
            target_logits=torch.cat([t[:-1] / s for (t, *_), s in zip(requests, scale, strict=True)]),
            bonus_token_ids=torch.stack([t[-1].argmax() for t, *_ in requests]).unsqueeze(1).to(torch.int32),
            sampling_metadata=metadata,
        )
    finally:
        ACTIVE.reset(token)
    return [[t for t in row if t >= 0] for row in out.tolist()], context.lossy.tolist()


@pytest.mark.parametrize("name", RULES)
def test_the_reference_engines_and_the_plugin_verify_alike(rejection_sample, name):
    rule = _rule(name)
    lossy = 0
    for seed in range(BATCHES):
        batch = _batch(seed)
        (reference, reference_lossy), (plugin, plugin_lossy) = (
            _reference(rule, batch),
            _plugin(rejection_sample, rule, batch),
        )
        assert plugin_lossy == reference_lossy, f"lossy accepts per request of batch {seed}"
        for b, (ours, theirs) in enumerate(zip(reference, plugin, strict=True)):
            assert len(ours) == len(theirs), f"request {b} of batch {seed}: {ours} vs {theirs}"
            if TEMPERATURES[b] == 0:
                assert ours == theirs, f"greedy request {b} of batch {seed}"
        for (target, drafts, *_), temperature, accepted in zip(
            batch["requests"], TEMPERATURES, reference, strict=True
        ):
            if temperature == 0:
                lossy += int((drafts[: len(accepted) - 1] != target[: len(accepted) - 1].argmax(-1)).sum())
    assert (lossy == 0) == (name == "exact")  # the lossy rules did accept greedy mismatches
