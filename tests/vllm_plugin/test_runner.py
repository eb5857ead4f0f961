"""The judge runner's per-step logic on small fakes of vLLM's runner state (pure logic, no engine)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from autojudge.rules.acceptance import TopK
from autojudge.vllm_plugin.config import PluginConfig
from autojudge.vllm_plugin.runner import (
    ACTIVE,
    JudgeRunnerMixin,
    RunnerState,
    UnhookedVerificationError,
)


def _runner(req_ids, params_by_req):
    requests = {r: SimpleNamespace(sampling_params=p) for r, p in params_by_req.items()}
    return SimpleNamespace(input_batch=SimpleNamespace(req_ids=req_ids), requests=requests, device="cpu")


def _metadata(num_draft_tokens, draft_token_ids):
    rows = sum(num_draft_tokens)
    return SimpleNamespace(
        num_draft_tokens=num_draft_tokens,
        draft_token_ids=torch.tensor(draft_token_ids),
        target_logits_indices=torch.arange(rows),
    )


def _state(drafted):
    state = RunnerState(config=PluginConfig("topk", top_k=4), head=None, num_speculative_tokens=4)
    state.drafted = set(drafted)
    state.pending_hidden = torch.zeros(16, 3)
    return state


def test_only_drafts_the_drafter_produced_may_be_accepted_lossily():
    plain = SimpleNamespace(extra_args=None)
    runner = _runner(["a", "b", "c"], {"a": plain, "b": plain, "c": plain})
    # a: 2 drafts, b: 3 drafts (drafted last step); c: 2 zero-filled placeholders (drafter skipped)
    metadata = _metadata([2, 3, 2], [5, 6, 7, 8, 9, 0, 0])
    context = _state(drafted={"a", "b"}).step_context(runner, metadata)
    assert context.drafted.tolist() == [True, True, True, True, True, False, False]
    assert len(context.rules) == 1 and isinstance(context.rules[0], TopK)
    assert context.target_hidden.shape == (7, 3)


def test_requests_with_their_own_rule_get_their_rows():
    exact = SimpleNamespace(extra_args={"autojudge_rule": "exact"})
    plain = SimpleNamespace(extra_args=None)
    runner = _runner(["a", "b"], {"a": plain, "b": exact})
    context = _state(drafted={"a", "b"}).step_context(runner, _metadata([2, 1], [1, 2, 3]))
    assert [rule.name for rule in context.rules] == ["topk", "exact"]
    assert context.rule_of_row.tolist() == [0, 0, 1]


def _fsd_state(drafted: set[str]) -> RunnerState:
    state = RunnerState(
        config=PluginConfig("fsd-tv", threshold=0.5),
        head=None,
        num_speculative_tokens=4,
        capture_draft_logits=True,
    )
    state.drafted, state.pending_hidden = drafted, torch.zeros(16, 3)
    return state


@pytest.mark.parametrize("drafted", [{"a", "b"}, {"a"}], ids=["both-drafted", "b-skipped"])
def test_a_rule_reading_drafter_logits_stops_a_step_the_drafter_kept_none_for(drafted):
    """Missing logits for drafts the drafter made this step mean a changed proposer: the step raises
    instead of verifying losslessly, also when another request of the step was skipped by the drafter."""
    plain = SimpleNamespace(extra_args=None)
    runner = _runner(["a", "b"], {"a": plain, "b": plain})
    with pytest.raises(UnhookedVerificationError, match="rule fsd-tv reads the drafter's logits"):
        _fsd_state(drafted).step_context(runner, _metadata([2, 1], [1, 2, 3]))


def test_a_request_the_drafter_skipped_is_filled_and_never_keeps_the_others_from_their_rule():
    """b's placeholder row gets zero logits (no rule may accept it: ``drafted`` is False there); a's rows
    get the drafter's logits, so the rule decides them."""
    plain = SimpleNamespace(extra_args=None)
    runner = _runner(["a", "b"], {"a": plain, "b": plain})
    state = _fsd_state({"a"})
    state.draft_logits, state.draft_req_ids = torch.arange(1.0, 25.0).reshape(2, 4, 3), ["a", "b"]
    context = state.step_context(runner, _metadata([2, 1], [1, 2, 3]))
    assert context.draft_logits.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [0.0, 0.0, 0.0]]
    assert context.drafted.tolist() == [True, True, False]


class _SilentBase:
    """A vLLM runner whose sampling step verifies without calling the patched rejection_sample."""

    def _sample(self, logits, spec_decode_metadata):
        return "verified by someone else"


class _HookedBase:
    def _sample(self, logits, spec_decode_metadata):
        if spec_decode_metadata is not None:
            ACTIVE.get().decided = True  # what the patched rejection_sample does
        return "verified by the rule"


@pytest.mark.parametrize(("base", "raises"), [(_SilentBase, True), (_HookedBase, False)])
def test_a_verification_the_rule_did_not_decide_raises(base, raises):
    runner = type("Runner", (JudgeRunnerMixin, base), {})()
    runner.input_batch = SimpleNamespace(req_ids=["a"])
    runner.requests = {"a": SimpleNamespace(sampling_params=None)}
    runner.device = "cpu"
    runner._autojudge = _state(drafted={"a"})
    metadata = _metadata([2], [1, 2])
    if raises:
        with pytest.raises(UnhookedVerificationError, match="without the plugin's rule deciding"):
            runner._sample(None, metadata)
    else:
        assert runner._sample(None, metadata) == "verified by the rule"
    assert runner._sample(None, None) in ("verified by someone else", "verified by the rule")  # no drafts
    assert ACTIVE.get() is None


def test_a_v2_runner_is_refused_by_the_judge_worker():
    from autojudge.vllm_plugin.compat import IncompatibleVllmError, engine_problems
    from autojudge.vllm_plugin.runner import adopt_runner

    class ModelRunnerV2:  # not a subclass of the V1 GPUModelRunner
        pass

    with pytest.raises(IncompatibleVllmError, match="supports only the V1 runner"):
        adopt_runner(ModelRunnerV2())
    speculative = SimpleNamespace(rejection_sample_method="standard")
    v2 = SimpleNamespace(use_v2_model_runner=True, speculative_config=speculative)
    assert any("Model Runner V2, which the plugin does not patch" in p for p in engine_problems(v2))
    v1 = SimpleNamespace(use_v2_model_runner=False, speculative_config=speculative)
    assert engine_problems(v1) == []


def test_drafts_sampled_from_the_drafter_are_refused():
    """The rules and the plugin's sampled path are written and tested for greedy drafts (draft_probs None);
    vLLM's probabilistic drafting would hand them drafter probabilities no test covers."""
    from autojudge.vllm_plugin.compat import engine_problems

    for method, refused in [("greedy", False), ("probabilistic", True)]:
        speculative = SimpleNamespace(rejection_sample_method="standard", draft_sample_method=method)
        problems = engine_problems(SimpleNamespace(use_v2_model_runner=False, speculative_config=speculative))
        assert problems == (
            [
                "draft_sample_method is 'probabilistic': the plugin verifies greedy drafts only "
                "(set draft_sample_method 'greedy', vLLM's default)"
            ]
            if refused
            else []
        )


def test_a_step_where_every_request_verifies_exactly_goes_through_the_same_core():
    """The lossless control and the lossy rules differ only in what they accept: exact is decided by the
    plugin's core like every rule, not handed back to vLLM's kernel; a step without drafts has no context."""
    exact = SimpleNamespace(extra_args={"autojudge_rule": "exact"})
    state = _state(drafted={"a", "b", "c"})
    runner = _runner(["a", "b"], {"a": exact, "b": exact})
    context = state.step_context(runner, _metadata([2, 1], [1, 2, 3]))
    assert [rule.name for rule in context.rules] == ["exact"] and context.rule_of_row is None
    runner = _runner(["a", "c"], {"a": exact, "c": SimpleNamespace(extra_args=None)})
    assert state.step_context(runner, _metadata([2, 1], [1, 2, 3])).rule_of_row.tolist() == [0, 0, 1]
    assert state.step_context(runner, _metadata([0, 0], [])) is None


def test_a_step_counts_real_drafts_and_lossy_accepts_by_request_and_rule():
    from autojudge.vllm_plugin.counters import LossyCounts

    exact = SimpleNamespace(extra_args={"autojudge_rule": "exact"})
    plain = SimpleNamespace(extra_args=None)
    state = _state(drafted={"a", "b"})
    state.counts = LossyCounts(None)
    # a: topk, 2 drafts; z: no drafts; b: exact, 1 draft; c: topk, 2 placeholders (drafter skipped)
    runner = _runner(["a", "z", "b", "c"], {"a": plain, "z": plain, "b": exact, "c": plain})
    state.step_context(runner, _metadata([2, 0, 1, 2], [1, 2, 3, 0, 0]))
    state.count_step(torch.tensor([1, 0, 0, 0]))
    assert state.counts.requests == {"a": [1, 2], "b": [0, 1]}
    runner = _runner(["b"], {"b": exact})
    assert state.step_context(runner, _metadata([1], [4])).rules[0].name == "exact"
    state.count_step(torch.tensor([0]))
    assert state.counts.requests["b"] == [0, 2]
    assert state.counts.totals["topk"][0] >= 1 and state.counts.totals["exact"][0] == 0
