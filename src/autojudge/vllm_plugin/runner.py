"""The judge model runner: vLLM's V1 runner with the verification step handed to an autojudge rule.

``adopt_runner`` turns the runner a worker built into a subclass of its own class (the CPU or
the GPU V1 runner) that overrides four methods of ``vllm/v1/worker/gpu_model_runner.py``:

* ``sample_tokens``: keeps the step's target hidden states (vLLM clears them before sampling)
  and records which requests the drafter really drafted for (``propose_draft_token_ids``);
* ``_sample``: V1's one call of the rejection sampler. It opens a ``StepContext`` that the
  patched ``rejection_sample`` (``patches.py``) decides with, and raises if verification ran
  without the rule having decided it (vLLM moved the call: never decode losslessly in silence);
* ``propose_draft_token_ids``: which requests got drafts this step (and, for rules that read them,
  the drafter's logits, kept by a subclass of the drafter's class);
* ``_update_states``: forgets finished requests' lossy-accept counts (``counters.py``), which ``_sample``
  adds up per request and rule after each verification.

A lossy rule may accept a mismatching draft token only if (1) the drafter produced it this step
(vLLM verifies zero-filled placeholders when the drafter was skipped), and (2) the target's
*processed* logit for it is finite (``allowed_token_ids``, ``bad_words``, ``min_tokens`` and
structured-output grammars are applied before verification; the patched ``rejection_sample``
checks it). vLLM 0.32 refuses ``logit_bias`` and ``min_p`` with speculative decoding, so no such
request reaches the rule.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch

from autojudge.errors import AutoJudgeError, ModelPairError
from autojudge.vllm_plugin.config import PluginConfig, request_config, resolve_config
from autojudge.vllm_plugin.counters import LossyCounts, StepRow, counters_dir, request_log_dir
from autojudge.vllm_plugin.step import ACTIVE, StepContext

logger = logging.getLogger("vllm.autojudge")


class UnhookedVerificationError(AutoJudgeError):
    """vLLM verified draft tokens without the plugin's rule deciding (a vLLM change)."""


@dataclass
class RunnerState:
    """The plugin's state on one model runner."""

    config: PluginConfig
    head: Any  # JudgeHead | None: the engine's pinned head, checked against its models
    num_speculative_tokens: int
    rules: dict[PluginConfig, Any] = field(default_factory=dict)
    rejected_overrides: set[str] = field(default_factory=set)  # requests already warned about
    request_rules: dict[str, Any] = field(default_factory=dict)  # rule of each request seen lately
    capture_draft_logits: bool = False
    draft_logits: torch.Tensor | None = None  # [B', K, V] from the last proposal
    draft_req_ids: list[str] | None = None  # request id of each of its B' rows
    drafted: set[str] = field(default_factory=set)  # requests with real drafts for this step
    drafting: set[str] = field(default_factory=set)  # filled by the proposal under way
    pending_hidden: torch.Tensor | None = None  # sample_hidden_states of the step being sampled
    counts: LossyCounts | None = None  # lossy accepts per request and rule (counters.py)
    step_rows: list[StepRow] = field(default_factory=list)  # this step's requests with drafts
    labels: dict[int, str] = field(default_factory=dict)  # id of a built rule -> its config's rule name

    def rule(self, config: PluginConfig) -> Any:
        """The (cached) rule for one config, for windows of ``num_speculative_tokens``."""
        from autojudge.rules.build import build_rule

        if config not in self.rules:
            self.rules[config] = build_rule(config, self.num_speculative_tokens, self.head)
            self.labels[id(self.rules[config])] = config.rule  # selfjudge builds a rule named judge
        return self.rules[config]

    def request_rule(self, req_id: str, sampling_params: Any) -> Any:
        """The rule of one request: the engine's, or its override (validated by the frontend)."""
        if req_id in self.request_rules:
            return self.request_rules[req_id]
        try:
            extra_args = getattr(sampling_params, "extra_args", None)
            config = request_config(self.config, extra_args, self.num_speculative_tokens)
        except AutoJudgeError as error:  # only reachable by bypassing the frontend's validation
            if req_id not in self.rejected_overrides:
                self.rejected_overrides.add(req_id)
                logger.error("autojudge: request %s keeps the engine's rule: %s", req_id, error)
            config = self.config
        self.request_rules[req_id] = self.rule(config)
        return self.request_rules[req_id]

    def step_context(self, runner: Any, metadata: Any) -> StepContext | None:
        """The rules, per-row permissions and features of one verification step (None: all exact)."""
        batch = runner.input_batch.req_ids
        if len(self.request_rules) > 2 * len(batch) + 256:  # forget finished requests
            self.request_rules = {r: self.request_rules[r] for r in batch if r in self.request_rules}
        rules: list[Any] = []
        per_row: list[int] = []
        real: list[bool] = []
        self.step_rows = []
        for row, (req_id, count) in enumerate(zip(batch, metadata.num_draft_tokens, strict=False)):
            if count == 0:
                continue
            state = runner.requests.get(req_id)
            params = None if state is None else state.sampling_params
            rule = self.request_rule(req_id, params)
            label = self.labels.get(id(rule), rule.name)
            self.step_rows.append((row, req_id, label, count if req_id in self.drafted else 0))
            if rule not in rules:
                rules.append(rule)
            per_row.extend([rules.index(rule)] * count)
            real.extend([req_id in self.drafted] * count)
        if not rules:
            return None  # no request has drafts: nothing to verify
        device = runner.device
        rule_of_row = None
        if len(rules) > 1:
            rule_of_row = torch.tensor(per_row, dtype=torch.long).to(device, non_blocking=True)
        assert self.pending_hidden is not None
        # Row r of sample_hidden_states produced logits row r; the row after a draft's own target
        # row is where the target read that draft token (vLLM takes the draft ids from the same
        # rows: input_ids[logits_indices][target_logits_indices + 1]).
        target_rows = metadata.target_logits_indices.long()
        target_hidden, context_hidden = self.pending_hidden[target_rows + 1], self.pending_hidden[target_rows]
        draft_logits = None
        if self.capture_draft_logits:
            draft_logits = self.take_draft_logits(list(batch), metadata.num_draft_tokens)
            readers = [rule.name for rule in rules if rule.reads_draft_logits]
            if draft_logits is None and readers and any(real):  # a request drafted for has none
                raise UnhookedVerificationError(
                    f"autojudge: rule {readers[0]} reads the drafter's logits, but the drafter kept none for "
                    "this step's drafts (this vLLM's proposer no longer samples through _greedy_sample)"
                )
        return StepContext(
            rules,
            rule_of_row,
            target_hidden,
            context_hidden,
            draft_logits,
            torch.tensor(real, dtype=torch.bool).to(device, non_blocking=True),
        )

    def count_step(self, lossy: torch.Tensor | None) -> None:
        """Count the verified step (``lossy``: [B] lossy accepts per batch row; None: none lossy)."""
        if self.counts is not None and self.step_rows:
            self.counts.add_step(self.step_rows, lossy)
        self.step_rows = []

    def take_draft_logits(self, req_ids: list[str], num_draft_tokens: list[int]) -> torch.Tensor | None:
        """[N, V] drafter logits in verification row order, or None if a request drafted this step lacks
        them. Rows of requests the drafter skipped (zero-filled placeholders) are zeros: no rule may
        accept them (``lossy_allowed``), and they never keep the step's other requests from their rule."""
        logits, row_req_ids = self.draft_logits, self.draft_req_ids
        self.draft_logits, self.draft_req_ids = None, None
        if logits is None or row_req_ids is None:
            return None
        rows, width, vocab = logits.shape
        row_of = {req_id: row for row, req_id in enumerate(row_req_ids[:rows])}
        index: list[int] = []
        keep: list[bool] = []
        for req_id, num in zip(req_ids, num_draft_tokens, strict=False):
            if num == 0:
                continue
            row = row_of.get(req_id)
            if req_id not in self.drafted:
                index.extend([0] * num)
            elif row is None or num > width:
                return None
            else:
                index.extend(range(row * width, row * width + num))
            keep.extend([req_id in self.drafted] * num)
        flat = torch.tensor(index, dtype=torch.long).to(logits.device, non_blocking=True)
        selected = logits.reshape(rows * width, vocab).index_select(0, flat)
        if all(keep):
            return selected
        kept = torch.tensor(keep, dtype=torch.bool).to(logits.device, non_blocking=True)
        return torch.where(kept.unsqueeze(1), selected, torch.zeros_like(selected))


class JudgeRunnerMixin:
    """The overrides of the judge runner (mixed into the worker's own V1 runner class)."""

    _autojudge: RunnerState | None

    def sample_tokens(self, grammar_output: Any) -> Any:
        state = self._autojudge
        pending = self.execute_model_state  # type: ignore[attr-defined]
        if state is None or pending is None:
            return super().sample_tokens(grammar_output)  # type: ignore[misc]
        state.pending_hidden = pending.sample_hidden_states
        state.drafting = set()
        try:
            return super().sample_tokens(grammar_output)  # type: ignore[misc]
        finally:
            state.pending_hidden = None
            state.drafted, state.drafting = state.drafting, set()

    def _update_states(self, scheduler_output: Any) -> Any:
        result = super()._update_states(scheduler_output)  # type: ignore[misc]
        state = self._autojudge
        if state is not None and state.counts is not None:
            state.counts.finish(scheduler_output.finished_req_ids)
        return result

    def _sample(self, logits: Any, spec_decode_metadata: Any) -> Any:
        state = self._autojudge
        if state is None or spec_decode_metadata is None:
            return super()._sample(logits, spec_decode_metadata)  # type: ignore[misc]
        context = state.step_context(self, spec_decode_metadata)
        if context is None:  # no drafts to verify
            return super()._sample(logits, spec_decode_metadata)  # type: ignore[misc]
        token = ACTIVE.set(context)
        try:
            output = super()._sample(logits, spec_decode_metadata)  # type: ignore[misc]
        finally:
            ACTIVE.reset(token)
        if not context.decided:
            raise UnhookedVerificationError(
                "autojudge: vLLM verified draft tokens without the plugin's rule deciding "
                f"({state.config.describe()}); this vLLM no longer calls "
                "vllm.v1.sample.rejection_sampler.rejection_sample from GPUModelRunner._sample"
            )
        state.count_step(context.lossy)
        return output

    def propose_draft_token_ids(self, *args: Any, **kwargs: Any) -> Any:
        result = super().propose_draft_token_ids(*args, **kwargs)  # type: ignore[misc]
        state = self._autojudge
        if state is not None:
            state.drafting = set(self.input_batch.req_ids)  # type: ignore[attr-defined]
            if state.capture_draft_logits:
                drafter = self.drafter  # type: ignore[attr-defined]
                logits = getattr(drafter, "_autojudge_draft_logits", None)
                drafter._autojudge_draft_logits = None
                state.draft_logits = logits
                state.draft_req_ids = None if logits is None else list(self.input_batch.req_ids)  # type: ignore[attr-defined]
        return result


@cache
def judge_runner_class(base: type) -> type:
    """``base`` (a V1 runner class) with the judge overrides."""
    return type(f"Judge{base.__name__}", (JudgeRunnerMixin, base), {})


def _stack_draft_logits(captured: list[torch.Tensor], draft_token_ids: torch.Tensor) -> torch.Tensor | None:
    """[B, K, V] from per-step [B(+pad), V] logits (or one [B*K, V] for parallel drafting)."""
    if draft_token_ids.ndim != 2 or not captured:
        return None
    batch, width = draft_token_ids.shape
    if width == 0:
        return None
    if len(captured) == width and all(c.shape[0] >= batch for c in captured):
        return torch.stack([c[:batch] for c in captured], dim=1)
    if len(captured) == 1 and captured[0].shape[0] == batch * width:
        return captured[0].view(batch, width, -1)
    return None


class CapturingDrafterMixin:
    """A drafter that keeps the logits each greedy draft token was chosen from."""

    _autojudge_capture: list[torch.Tensor] | None = None
    _autojudge_draft_logits: torch.Tensor | None = None

    def _greedy_sample(self, hidden_states: torch.Tensor) -> torch.Tensor:
        if self._autojudge_capture is None:
            return super()._greedy_sample(hidden_states)  # type: ignore[misc]
        logits = self.model.compute_logits(hidden_states)  # type: ignore[attr-defined]
        self._autojudge_capture.append(logits)
        return logits.argmax(dim=-1)

    def propose(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        self._autojudge_capture = []
        try:
            draft_token_ids = super().propose(*args, **kwargs)  # type: ignore[misc]
        finally:
            captured, self._autojudge_capture = self._autojudge_capture, None
        self._autojudge_draft_logits = _stack_draft_logits(captured, draft_token_ids)
        return draft_token_ids


@cache
def capturing_drafter_class(base: type) -> type:
    return type(f"Capturing{base.__name__}", (CapturingDrafterMixin, base), {})


def _load_head(runner: Any, config: PluginConfig) -> Any:
    """The engine's pinned head, checked against the hash the frontend pinned and against the models."""
    from autojudge.vllm_plugin.heads import load_checked_head
    from autojudge.vllm_plugin.pinning import check_pinned, file_sha256

    assert config.judge_head is not None
    if config.judge_head.startswith("models:/"):
        raise ModelPairError(
            f"autojudge: judge head {config.judge_head} reached the worker unpinned; the engine's "
            "frontend resolves it (is the plugin installed where the engine is built?)"
        )
    if config.judge_head_sha256:
        check_pinned(config.judge_head, config.judge_head_sha256)
        sha = config.judge_head_sha256
    else:
        sha = file_sha256(config.judge_head)
    target = runner.model_config
    head = load_checked_head(
        config.judge_head, target.model, target.get_hidden_size(), runner.speculative_config.method
    ).to(runner.device)
    logger.info("autojudge: worker %d loaded judge head %s sha256 %s", os.getpid(), config.judge_head, sha)
    return head


def _runner_state(runner: Any) -> RunnerState | None:
    """The plugin state of a freshly built runner, or None if its engine did not enable the plugin."""
    config = resolve_config(getattr(runner.vllm_config, "additional_config", None), os.environ)
    if config is None:
        return None
    from autojudge.vllm_plugin.compat import check_enabled_engine

    check_enabled_engine(runner.vllm_config, config.describe())
    head = _load_head(runner, config) if config.judge_head else None
    state = RunnerState(
        config=config,
        head=head,
        num_speculative_tokens=runner.speculative_config.num_speculative_tokens,
        capture_draft_logits=config.needs_draft_logits,
        counts=LossyCounts(counters_dir(), request_log_dir()),
    )
    state.rule(config)  # build the engine's rule now: bad settings stop the engine at start
    if state.capture_draft_logits:
        from vllm.v1.spec_decode.llm_base_proposer import SpecDecodeBaseProposer

        drafter = getattr(runner, "drafter", None)
        if (
            not isinstance(drafter, SpecDecodeBaseProposer)
            or getattr(drafter, "use_local_argmax_reduction", False)
            or getattr(drafter, "use_heterogeneous_vocab", False)
        ):
            raise ModelPairError(
                f"autojudge: rule {config.describe()} needs the drafter's logits, which the "
                f"{type(drafter).__name__} drafter does not expose"
            )
        drafter.__class__ = capturing_drafter_class(type(drafter))
    logger.info(
        "autojudge: verification rule %s (spec method %s, runner %s)",
        config.describe(),
        runner.speculative_config.method,
        type(runner).__name__,
    )
    return state


def adopt_runner(runner: Any) -> Any:
    """Turn a worker's freshly built V1 runner into the judge runner (V2 runners are refused)."""
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    from autojudge.vllm_plugin.compat import V2_RUNNER, IncompatibleVllmError
    from autojudge.vllm_plugin.patches import patch_expand_batch_to_tokens, patch_rejection_sample

    if not isinstance(runner, GPUModelRunner):
        raise IncompatibleVllmError(
            f"autojudge: the judge worker got a {type(runner).__module__}.{type(runner).__name__}, "
            f"Model Runner {V2_RUNNER}; the plugin supports only the V1 runner "
            "(unset VLLM_USE_V2_MODEL_RUNNER or set it to 0)"
        )
    state = _runner_state(runner)
    if state is not None:
        patch_expand_batch_to_tokens(runner.device)
        patch_rejection_sample()
    runner.__class__ = judge_runner_class(type(runner))
    runner._autojudge = state
    return runner
