"""Monkeypatches that swap vLLM's greedy verification decision for an autojudge rule.

Targets vLLM 0.32's V1 model runner (``vllm/v1/worker/gpu_model_runner.py``), which the CPU
build always uses and the CUDA build uses with ``VLLM_USE_V2_MODEL_RUNNER=0``:

* ``vllm.v1.sample.rejection_sampler.rejection_sample`` (module function, looked up by
  ``RejectionSampler.forward`` at call time): the decision itself. Everything around it —
  bonus-token sampling, logits processors, logprobs — stays vLLM's.
* ``GPUModelRunner.__init__``: reads the engine's config and builds the rule (fails fast on a
  judge head whose hidden sizes, tokenizer or features do not fit the models).
* ``GPUModelRunner.sample_tokens``: exposes, for the duration of one verification, the target's
  hidden states at the draft positions and the drafter's logits, through a ContextVar.
* ``GPUModelRunner.propose_draft_token_ids`` and ``SpecDecodeBaseProposer.propose`` /
  ``._greedy_sample``: keep the drafter's logits (divergence rule only).
* ``vllm.v1.worker.gpu.model_runner.GPUModelRunner.__init__`` (Model Runner V2): refuses to start
  with the plugin enabled, since V2 verifies elsewhere.

Every patch is a no-op unless the engine enabled the plugin (see ``config.resolve_config``).
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch

from autojudge.decoding.rules import AcceptanceRule, Window
from autojudge.errors import AutoJudgeError, InputError, ModelPairError
from autojudge.heads.artifact import JudgeHead
from autojudge.vllm_plugin.config import PluginConfig, request_config, resolve_config
from autojudge.vllm_plugin.heads import load_checked_head
from autojudge.vllm_plugin.hooks import when_imported
from autojudge.vllm_plugin.verify import accept_mismatch, build_rule, greedy_verify

logger = logging.getLogger("vllm.autojudge")  # child of "vllm": printed with vLLM's handlers

REJECTION_SAMPLER_MODULE = "vllm.v1.sample.rejection_sampler"
PROPOSER_MODULE = "vllm.v1.spec_decode.llm_base_proposer"
V1_RUNNER_MODULE = "vllm.v1.worker.gpu_model_runner"
V2_RUNNER_MODULE = "vllm.v1.worker.gpu.model_runner"

_REJECTION_SAMPLE_ARGS = (
    "draft_token_ids",
    "num_draft_tokens",
    "max_spec_len",
    "cu_num_draft_tokens",
    "draft_probs",
    "target_logits",
    "bonus_token_ids",
    "sampling_metadata",
    "synthetic_mode",
)
_ORIGINAL = "_autojudge_original"


@dataclass(frozen=True)
class StepContext:
    """What one verification step decides with beyond vLLM's own arguments."""

    rules: list[AcceptanceRule]  # the distinct rules of this step's requests
    rule_of_row: torch.Tensor | None  # [N] index into rules per draft row (None: one rule)
    target_hidden: torch.Tensor  # [N, H] target hidden state at each draft token's position
    draft_logits: torch.Tensor | None  # [N, V] drafter logits each draft token was chosen from


@dataclass
class RunnerState:
    """The plugin's state on one model runner."""

    config: PluginConfig
    head: JudgeHead | None  # the engine's judge head, checked against its models
    rules: dict[PluginConfig, AcceptanceRule] = field(default_factory=dict)
    rejected_overrides: set[str] = field(default_factory=set)  # requests already warned about
    capture_draft_logits: bool = False
    draft_logits: torch.Tensor | None = None  # [B', K, V] from the last proposal
    draft_req_ids: list[str] | None = None  # request id of each of its B' rows

    def _head(self, location: str) -> JudgeHead:
        assert self.head is not None and location == self.config.judge_head
        return self.head

    def rule(self, config: PluginConfig) -> AcceptanceRule:
        """The (cached) rule for one config."""
        if config not in self.rules:
            self.rules[config] = build_rule(config, self._head)
        return self.rules[config]

    def request_rule(self, req_id: str, sampling_params: Any) -> AcceptanceRule:
        """The rule of one request: the engine's, or its valid ``extra_args`` override."""
        try:
            config = request_config(self.config, getattr(sampling_params, "extra_args", None))
        except AutoJudgeError as error:
            if req_id not in self.rejected_overrides:
                self.rejected_overrides.add(req_id)
                logger.error("autojudge: request %s keeps the engine's rule: %s", req_id, error)
            config = self.config
        return self.rule(config)

    def step_rules(
        self, runner: Any, num_draft_tokens: list[int]
    ) -> tuple[list[AcceptanceRule], torch.Tensor | None]:
        """The distinct rules of the requests in this verification and, if several, each row's rule."""
        rules: list[AcceptanceRule] = []
        per_row: list[int] = []
        for req_id, count in zip(runner.input_batch.req_ids, num_draft_tokens, strict=False):
            if count == 0:
                continue
            state = runner.requests.get(req_id)
            rule = self.request_rule(req_id, None if state is None else state.sampling_params)
            if rule not in rules:
                rules.append(rule)
            per_row.extend([rules.index(rule)] * count)
        if len(rules) <= 1:
            return rules or [self.rule(self.config)], None
        rows = torch.tensor(per_row, dtype=torch.long).to(runner.device, non_blocking=True)
        return rules, rows

    def take_draft_logits(self, req_ids: list[str], num_draft_tokens: list[int]) -> torch.Tensor | None:
        """[N, V] drafter logits in verification row order, or None if any request lacks them."""
        logits, row_req_ids = self.draft_logits, self.draft_req_ids
        self.draft_logits, self.draft_req_ids = None, None
        if logits is None or row_req_ids is None:
            return None
        rows, width, vocab = logits.shape
        row_of = {req_id: row for row, req_id in enumerate(row_req_ids[:rows])}
        index: list[int] = []
        for req_id, num in zip(req_ids, num_draft_tokens, strict=False):
            if num == 0:
                continue
            row = row_of.get(req_id)
            if row is None or num > width:
                return None
            index.extend(range(row * width, row * width + num))
        flat = torch.tensor(index, dtype=torch.long).to(logits.device, non_blocking=True)
        return logits.reshape(rows * width, vocab).index_select(0, flat)


_ACTIVE: ContextVar[StepContext | None] = ContextVar("autojudge_step", default=None)
_rejection_sample_patched = False


def _mark(wrapper: Callable[..., Any], original: Callable[..., Any]) -> Callable[..., Any]:
    functools.update_wrapper(wrapper, original)
    setattr(wrapper, _ORIGINAL, original)
    return wrapper


def _is_patched(fn: Any) -> bool:
    return hasattr(fn, _ORIGINAL)


# --- rejection sampler: the decision ---------------------------------------------------------


def _patch_rejection_sampler(module: ModuleType) -> None:
    global _rejection_sample_patched
    original = module.rejection_sample
    if _is_patched(original):
        _rejection_sample_patched = True
        return
    signature = inspect.signature(original)
    missing = [name for name in _REJECTION_SAMPLE_ARGS if name not in signature.parameters]
    if missing:
        logger.error("autojudge: %s.rejection_sample lacks %s; not patched", module.__name__, missing)
        return

    def rejection_sample(*args: Any, **kwargs: Any) -> torch.Tensor:
        ctx = _ACTIVE.get()
        if ctx is None:
            return original(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        metadata = a["sampling_metadata"]
        if a["synthetic_mode"] or metadata.all_random:
            return original(*args, **kwargs)
        window = Window(
            draft_tokens=a["draft_token_ids"],
            target_logits=a["target_logits"],
            draft_logits=ctx.draft_logits,
            target_hidden=ctx.target_hidden,
        )
        accept = accept_mismatch(ctx.rules, ctx.rule_of_row, window)
        ours = greedy_verify(
            a["draft_token_ids"],
            a["cu_num_draft_tokens"],
            a["max_spec_len"],
            a["target_logits"],
            a["bonus_token_ids"],
            accept,
        )
        if metadata.all_greedy:
            return ours
        # Mixed batch: vLLM decides the sampled requests, the rule decides the greedy ones.
        theirs = original(*args, **kwargs)
        is_greedy = (metadata.temperature == 0).unsqueeze(1)
        return torch.where(is_greedy, ours, theirs)

    module.rejection_sample = _mark(rejection_sample, original)
    _rejection_sample_patched = True


# --- drafter: keep the logits each draft token was chosen from -------------------------------


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


def _patch_proposer(module: ModuleType) -> None:
    cls = module.SpecDecodeBaseProposer
    if _is_patched(cls.propose):
        return
    greedy_sample = cls._greedy_sample
    propose = cls.propose

    def _greedy_sample(self: Any, hidden_states: torch.Tensor) -> torch.Tensor:
        capture: list[torch.Tensor] | None = getattr(self, "_autojudge_capture", None)
        if capture is None:
            return greedy_sample(self, hidden_states)
        logits = self.model.compute_logits(hidden_states)
        capture.append(logits)
        return logits.argmax(dim=-1)

    def propose_wrapper(self: Any, *args: Any, **kwargs: Any) -> torch.Tensor:
        if not getattr(self, "_autojudge_capture_enabled", False):
            return propose(self, *args, **kwargs)
        self._autojudge_capture = []
        try:
            draft_token_ids = propose(self, *args, **kwargs)
        finally:
            captured, self._autojudge_capture = self._autojudge_capture, None
        self._autojudge_draft_logits = _stack_draft_logits(captured, draft_token_ids)
        return draft_token_ids

    cls._greedy_sample = _mark(_greedy_sample, greedy_sample)
    cls.propose = _mark(propose_wrapper, propose)


# --- V1 model runner -------------------------------------------------------------------------


def _make_runner_state(runner: Any) -> RunnerState | None:
    """Build the plugin state for a freshly constructed runner, or None if the engine did not enable it."""
    config = resolve_config(getattr(runner.vllm_config, "additional_config", None), os.environ)
    if config is None:
        return None
    if not _rejection_sample_patched:
        raise RuntimeError("autojudge: vLLM's rejection sampler could not be patched (incompatible vLLM?)")
    spec = runner.speculative_config
    if spec is None:
        logger.warning("autojudge: rule %s configured but speculative decoding is off", config.describe())
        return None
    if spec.rejection_sample_method != "standard":
        raise InputError(
            f"autojudge: needs rejection_sample_method='standard', got {spec.rejection_sample_method!r}"
        )
    if spec.method != "draft_model":
        logger.warning("autojudge: designed for method 'draft_model', engine uses %r", spec.method)
    head = None
    if config.judge_head:
        target, draft = runner.model_config, spec.draft_model_config
        head = load_checked_head(
            config.judge_head,
            target.model,
            draft.model if draft is not None else "(no draft model)",
            target.get_hidden_size(),
            draft.get_hidden_size() if draft is not None else 0,
        )
        head.weight = head.weight.to(device=runner.device, dtype=torch.float32)
    state = RunnerState(config=config, head=head, capture_draft_logits=config.rule == "divergence")
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
                f"{type(drafter).__name__} drafter of method {spec.method!r} does not expose"
            )
        drafter._autojudge_capture_enabled = True
    logger.info("autojudge: greedy verification rule %s (spec method %s)", config.describe(), spec.method)
    return state


def _patch_v1_runner(module: ModuleType) -> None:
    cls = module.GPUModelRunner
    if _is_patched(cls.sample_tokens):
        return
    fields = getattr(module.ExecuteModelState, "_fields", ())
    if "spec_decode_metadata" not in fields or "sample_hidden_states" not in fields:
        logger.error("autojudge: unexpected ExecuteModelState fields %s; runner not patched", fields)
        return
    init, sample_tokens, propose = cls.__init__, cls.sample_tokens, cls.propose_draft_token_ids

    def init_wrapper(self: Any, vllm_config: Any, *args: Any, **kwargs: Any) -> None:
        init(self, vllm_config, *args, **kwargs)
        self._autojudge = _make_runner_state(self)

    def sample_tokens_wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        state: RunnerState | None = getattr(self, "_autojudge", None)
        pending = self.execute_model_state
        if state is None or pending is None or pending.spec_decode_metadata is None:
            return sample_tokens(self, *args, **kwargs)
        metadata = pending.spec_decode_metadata
        rules, rule_of_row = state.step_rules(self, metadata.num_draft_tokens)
        # Row r of sample_hidden_states produced logits row r; the row after a draft's own
        # target row is where the target read that draft token (vLLM takes the draft ids
        # from the same rows: input_ids[logits_indices][target_logits_indices + 1]).
        target_hidden = pending.sample_hidden_states[metadata.target_logits_indices.long() + 1]
        draft_logits = None
        if state.capture_draft_logits:
            draft_logits = state.take_draft_logits(list(self.input_batch.req_ids), metadata.num_draft_tokens)
        token = _ACTIVE.set(StepContext(rules, rule_of_row, target_hidden, draft_logits))
        try:
            return sample_tokens(self, *args, **kwargs)
        finally:
            _ACTIVE.reset(token)

    def propose_wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = propose(self, *args, **kwargs)
        state: RunnerState | None = getattr(self, "_autojudge", None)
        if state is not None and state.capture_draft_logits:
            logits = getattr(self.drafter, "_autojudge_draft_logits", None)
            self.drafter._autojudge_draft_logits = None
            state.draft_logits = logits
            state.draft_req_ids = None if logits is None else list(self.input_batch.req_ids)
        return result

    cls.__init__ = _mark(init_wrapper, init)
    cls.sample_tokens = _mark(sample_tokens_wrapper, sample_tokens)
    cls.propose_draft_token_ids = _mark(propose_wrapper, propose)


def _patch_v2_runner(module: ModuleType) -> None:
    cls = module.GPUModelRunner
    if _is_patched(cls.__init__):
        return
    init = cls.__init__

    def init_guard(self: Any, vllm_config: Any, *args: Any, **kwargs: Any) -> None:
        if resolve_config(getattr(vllm_config, "additional_config", None), os.environ) is not None:
            raise InputError(
                "autojudge: the vLLM plugin patches the V1 model runner only; this engine uses "
                "Model Runner V2. Set VLLM_USE_V2_MODEL_RUNNER=0."
            )
        init(self, vllm_config, *args, **kwargs)

    cls.__init__ = _mark(init_guard, init)


def install() -> None:
    """Patch vLLM's modules as they get imported (idempotent; safe in every process)."""
    when_imported(REJECTION_SAMPLER_MODULE, _patch_rejection_sampler)
    when_imported(PROPOSER_MODULE, _patch_proposer)
    when_imported(V1_RUNNER_MODULE, _patch_v1_runner)
    when_imported(V2_RUNNER_MODULE, _patch_v2_runner)
