"""The patched ``rejection_sample`` on a hand-made mixed batch, against vLLM's own function (real vLLM CPU
build, no engine): the exact rule gives vLLM's tokens bit for bit with the same seeds; a rule accepting
everything accepts every sampled draft the target can emit, and never one it cannot (p(x) = 0)."""

from __future__ import annotations

import functools

import pytest
import torch

from autojudge.rules.acceptance import ExactMatch, TopK
from autojudge.vllm_plugin.patches import patch_expand_batch_to_tokens, patch_rejection_sample
from autojudge.vllm_plugin.step import ACTIVE, StepContext

V = 40
DRAFTS = [3, 3, 2]  # request 0 sampled (seeded), 1 greedy, 2 sampled (seeded)
TEMPERATURE = [0.7, 0.0, 1.0]


def test_the_cpu_builds_broken_expand_batch_to_tokens_is_replaced():
    """vLLM 0.32's CPU override writes per-token temperatures into an int64 copy, returning uninitialised
    memory; the judge runner on the CPU installs the torch version. Fails once vLLM's own is right (then
    the workaround can go)."""
    from vllm.platforms.cpu import CpuPlatform
    from vllm.v1.sample import rejection_sampler as module

    CpuPlatform.register_triton_kernel_overrides()
    temperature, cu = torch.tensor([0.0, 0.7, 1.3]), torch.tensor([2, 5, 6], dtype=torch.int32)
    expected = torch.tensor([1.0, 1.0, 0.7, 0.7, 0.7, 1.3])
    assert patch_expand_batch_to_tokens("cpu")
    stock = module.expand_batch_to_tokens._autojudge_original
    assert not torch.equal(stock(temperature, cu, 6, replace_from=0, replace_to=1), expected)
    assert torch.equal(
        module.expand_batch_to_tokens(temperature, cu, 6, replace_from=0, replace_to=1), expected
    )


def test_on_another_device_the_workaround_leaves_vllms_kernel_alone(monkeypatch):
    """On CUDA the function is a Triton kernel: a probe with CPU tensors would crash the engine's start."""
    from vllm.v1.sample import rejection_sampler as module

    def kernel(*args, **kwargs):
        raise AssertionError("probed on a device where it does not apply")

    monkeypatch.setattr(module, "expand_batch_to_tokens", kernel)
    assert not patch_expand_batch_to_tokens(torch.device("cuda", 0))
    assert module.expand_batch_to_tokens is kernel


def _batch(forbid: bool = False, draft_rank: int = 1, seeded: bool = True) -> dict:
    """One step's arguments, as RejectionSampler.forward passes them (processed logits; the drafts are
    each row's ``draft_rank``-th likeliest token: 1 is often rejected, 0 often accepted; seeded requests
    0 and 2, or none)."""
    from vllm.v1.sample.logits_processor import LogitsProcessors
    from vllm.v1.sample.metadata import SamplingMetadata

    torch.manual_seed(0)
    rows = sum(DRAFTS)
    temperature = torch.tensor(TEMPERATURE)
    per_row = torch.repeat_interleave(torch.where(temperature > 0, temperature, 1.0), torch.tensor(DRAFTS))
    logits = (3 * torch.randn(rows, V)) / per_row.unsqueeze(1)
    draft = logits.topk(2, dim=-1).indices[:, draft_rank].to(torch.int32)
    if forbid:
        logits[1, draft[1]] = float("-inf")  # request 0's second draft is outside the nucleus
    metadata = SamplingMetadata(
        temperature=temperature, all_greedy=False, all_random=False, top_p=None, top_k=None,
        generators={0: torch.Generator().manual_seed(11), 2: torch.Generator().manual_seed(12)} if seeded else {},
        max_num_logprobs=None, no_penalties=True, prompt_token_ids=None,
        frequency_penalties=torch.zeros(3), presence_penalties=torch.zeros(3), repetition_penalties=torch.ones(3),
        output_token_ids=[[], [], []], allowed_token_ids_mask=None, bad_words_token_ids={},
        logitsprocs=LogitsProcessors(),
    )  # fmt: skip
    return {
        "draft_token_ids": draft.contiguous(),
        "num_draft_tokens": DRAFTS,
        "max_spec_len": max(DRAFTS),
        "cu_num_draft_tokens": torch.tensor(DRAFTS).cumsum(0).to(torch.int32),
        "draft_probs": None,
        "target_logits": logits.contiguous(),
        "bonus_token_ids": torch.tensor([[5], [6], [7]], dtype=torch.int32),
        "sampling_metadata": metadata,
    }


def _run(function, arguments: dict, rule=None) -> torch.Tensor:
    torch.manual_seed(1)  # the unseeded draws vLLM makes for greedy rows
    context = None
    if rule is not None:
        rows = sum(DRAFTS)
        context = StepContext(
            [rule], None, torch.zeros(rows, 4), torch.zeros(rows, 4), None, torch.ones(rows, dtype=torch.bool)
        )
    token = ACTIVE.set(context)
    try:
        return function(**arguments)
    finally:
        ACTIVE.reset(token)


def test_the_exact_rule_decides_a_mixed_batch_as_vllm_does_with_the_same_seeds(sampler):
    module, original = sampler
    stock = _run(original, _batch())
    plugin = _run(module.rejection_sample, _batch(), ExactMatch())
    assert torch.equal(plugin, stock)
    assert (stock[0] == -1).any() or (stock[2] == -1).any()  # a sampled request was cut by a rejection


@pytest.mark.parametrize("seeded", [True, False], ids=["seeded", "unseeded"])
def test_where_sampled_drafts_are_accepted_the_exact_rule_still_decides_as_vllm_does(sampler, seeded):
    """The draw order holds where the standard test accepts (a double draw, reversed or 1 - u uniforms
    would change which drafts pass), for seeded requests and for those drawing from the global generator."""
    module, original = sampler
    stock = _run(original, _batch(draft_rank=0, seeded=seeded))
    plugin = _run(module.rejection_sample, _batch(draft_rank=0, seeded=seeded), ExactMatch())
    assert torch.equal(plugin, stock)
    draft = _batch(draft_rank=0)["draft_token_ids"].tolist()
    sampled_accepts = [stock[0, 0].item() == draft[0], stock[2, 0].item() == draft[6]]
    assert any(sampled_accepts)  # a sampled request kept its first draft token


def test_a_rule_accepting_everything_takes_every_sampled_draft_the_target_can_emit(sampler):
    module, _ = sampler
    arguments = _batch(forbid=True)
    draft = arguments["draft_token_ids"].tolist()
    out = _run(module.rejection_sample, arguments, TopK(V)).tolist()
    assert out[2] == [*draft[6:8], 7, -1]  # request 2: both drafts, then its bonus token
    assert out[0][0] == draft[0] and out[0][1] != draft[1] and out[0][2:] == [-1, -1]  # stops at p(x) = 0
    assert out[1][:3] == draft[3:6] and out[1][3] == 6  # the greedy request: all accepted, bonus


def test_a_vllm_that_draws_its_uniforms_elsewhere_stops_the_step(sampler, monkeypatch):
    """Forcing acceptances works only through the module's ``generate_uniform_probs``: a vLLM whose
    rejection_sample held its own reference would verify without the rule (and draw uniforms twice)."""
    from autojudge.vllm_plugin.runner import UnhookedVerificationError

    module, original = sampler
    own_reference = module.generate_uniform_probs

    @functools.wraps(original)
    def draws_by_its_own_reference(*args, **kwargs):
        with monkeypatch.context() as inside:
            inside.setattr(module, "generate_uniform_probs", own_reference)
            return original(*args, **kwargs)

    monkeypatch.setattr(module, "rejection_sample", draws_by_its_own_reference)
    patch_rejection_sample()
    with pytest.raises(UnhookedVerificationError, match="without drawing its uniforms"):
        _run(module.rejection_sample, _batch(), TopK(V))
    assert _run(original, _batch()).shape == (3, max(DRAFTS) + 1)  # vLLM's own function is untouched
