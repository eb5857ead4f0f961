"""Everything the plugin still patches in vLLM 0.32, in one place (docs/vllm-plugin.md lists it).

The judge runner (``runner.py``) and worker (``worker.py``) are subclasses that vLLM loads
through its own ``worker_cls`` seam; they patch nothing. Three functions remain patched, because
vLLM offers no seam there:

* ``EngineArgs.create_engine_config`` (frontend, every process that builds an engine): for an
  engine that enabled the plugin, select vLLM's V1 model runner before vLLM builds the config
  (``compat.select_v1_runner``), refuse what cannot run (``compat``), pin the judge head
  (``pinning``), select the judge worker, show the lossy-accept counters on this process's Prometheus
  registry (``counters``), and install the request validation below. Engines
  that did not enable the plugin get vLLM's config untouched.
* ``InputProcessor._validate_params`` (frontend, enabled engines only): a request whose
  autojudge keys the engine cannot serve is refused with vLLM's validation error (HTTP 400
  through the OpenAI server), before it reaches the engine.
* ``vllm.v1.sample.rejection_sampler.rejection_sample`` (worker, enabled engines only): the
  decision. ``RejectionSampler.forward`` calls this module function after applying the sampling
  constraints; while the judge runner's ``_sample`` has a step open, the rule decides (the step's
  ``StepContext.decide_greedy`` or ``decide_sampled``, ``step.py``), otherwise it is vLLM's function
  unchanged. Greedy requests are verified by ``rules.verification.greedy_verify``. Sampled requests
  stay with vLLM's kernel: the patch draws the step's uniforms as vLLM would (``generate_uniform_probs``,
  the same generators in the same order), takes the standard test's verdict u <= p(x) / q(x) from them,
  asks the rule, and hands vLLM the same uniforms with u = 0 where the rule accepts a rejected token
  that the target can emit (p(x) > 0), as vLLM 0.33's FLy does. Recovered and bonus tokens, seeds and
  the exact rule's tokens stay vLLM's. Either way it leaves each request's lossy accepts on the step
  (``lossy_per_request``) for the runner's counters (``counters.py``).
* ``vllm.v1.sample.rejection_sampler.expand_batch_to_tokens`` (worker, enabled engines, only where it is
  broken): on the CPU build of vLLM 0.32 its kernel override casts the output to int64 and writes into
  that copy, so per-token temperatures, top-p and top-k are uninitialised memory and every sampled
  request under speculative decoding samples at random temperatures (greedy requests in the same batch
  get garbage logits). A judge runner on the CPU checks the function on a small input and, if it is
  wrong, replaces it with its torch equivalent; on other devices it leaves vLLM's kernel alone
  (``tests/vllm_plugin/test_sampled_verification.py``).
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

logger = logging.getLogger("vllm.autojudge")  # child of "vllm": printed with vLLM's handlers

ENGINE_ARGS_MODULE = "vllm.engine.arg_utils"
INPUT_PROCESSOR_MODULE = "vllm.v1.engine.input_processor"
REJECTION_SAMPLER_MODULE = "vllm.v1.sample.rejection_sampler"
JUDGE_WORKER = "autojudge.vllm_plugin.worker.JudgeWorker"
PLATFORM_WORKERS = ("vllm.v1.worker.cpu_worker.CPUWorker", "vllm.v1.worker.gpu_worker.Worker")
_ORIGINAL = "_autojudge_original"


def _mark(wrapper: Callable[..., Any], original: Callable[..., Any]) -> Callable[..., Any]:
    functools.update_wrapper(wrapper, original)
    setattr(wrapper, _ORIGINAL, original)
    return wrapper


def is_patched(fn: Any) -> bool:
    return hasattr(fn, _ORIGINAL)


# --- frontend: engine config ------------------------------------------------------------------


def prepare_engine(vllm_config: Any) -> None:
    """Check, pin and route an engine that enabled the plugin; leave every other engine alone."""
    from autojudge.errors import InputError
    from autojudge.vllm_plugin.compat import IncompatibleVllmError, check_enabled_engine, runner_of
    from autojudge.vllm_plugin.config import CONFIG_KEY, resolve_config
    from autojudge.vllm_plugin.counters import expose_counters

    config = resolve_config(vllm_config.additional_config, os.environ)
    if config is None:
        return
    check_enabled_engine(vllm_config, config.describe())
    spec = vllm_config.speculative_config
    if config.needs_draft_logits and not (spec.uses_draft_model() or spec.use_eagle()):  # no drafter model
        raise InputError(
            f"autojudge: rule {config.rule!r} reads the drafter's logits, and the {spec.method} proposer has "
            "none; serve a rule on the target alone (judge, selfjudge, target-entropy, topk, fly)"
        )
    parallel = vllm_config.parallel_config
    if parallel.worker_cls in PLATFORM_WORKERS:
        parallel.worker_cls = JUDGE_WORKER
    elif parallel.worker_cls != JUDGE_WORKER:
        raise IncompatibleVllmError(
            f"autojudge: the engine enabled rule {config.describe()} but its worker_cls is "
            f"{parallel.worker_cls}, not {JUDGE_WORKER}"
        )
    pinned = {key: value for key, value in vars(config).items() if value is not None}
    expose_counters()  # before the engine's processes start: they inherit where to write
    if config.judge_head:
        from autojudge.vllm_plugin.heads import load_checked_head
        from autojudge.vllm_plugin.pinning import pin_head

        head = pin_head(config.judge_head)
        if config.judge_head_sha256 and config.judge_head_sha256 != head.sha256:
            raise InputError(
                f"autojudge: judge head {config.judge_head} resolved to sha256 {head.sha256}, but the "
                f"engine config pins {config.judge_head_sha256} (the alias moved, or the file changed)"
            )
        model = vllm_config.model_config
        load_checked_head(
            str(head.path), model.model, model.get_hidden_size(), vllm_config.speculative_config.method
        )
        pinned.update(judge_head=str(head.path), judge_head_sha256=head.sha256)
        logger.info("autojudge: judge head %s pinned to %s (sha256 %s)", head.source, head.path, head.sha256)
    vllm_config.additional_config = {**(vllm_config.additional_config or {}), CONFIG_KEY: pinned}
    patch_input_processor()
    logger.info(
        "autojudge: rule %s on %s, worker %s", config.describe(), runner_of(vllm_config), JUDGE_WORKER
    )


def patch_engine_args(module: ModuleType) -> None:
    cls = module.EngineArgs
    original = cls.create_engine_config
    if is_patched(original):
        return

    def create_engine_config(self: Any, *args: Any, **kwargs: Any) -> Any:
        from autojudge.vllm_plugin.compat import select_v1_runner

        select_v1_runner(getattr(self, "additional_config", None))  # before vLLM's config picks the runner
        vllm_config = original(self, *args, **kwargs)
        prepare_engine(vllm_config)
        return vllm_config

    cls.create_engine_config = _mark(create_engine_config, original)


# --- frontend: per-request validation ---------------------------------------------------------


def patch_input_processor() -> None:
    """Refuse a request's autojudge keys that its engine cannot serve (installed by enabled engines)."""
    from vllm.v1.engine.input_processor import InputProcessor

    original = InputProcessor._validate_params
    if is_patched(original):
        return

    def _validate_params(self: Any, params: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, params, *args, **kwargs)
        extra_args = getattr(params, "extra_args", None)
        if extra_args:
            spec = self.vllm_config.speculative_config
            tokens = spec.num_speculative_tokens if spec is not None else None
            validate_request(self.vllm_config.additional_config, extra_args, tokens)
        return result

    InputProcessor._validate_params = _mark(_validate_params, original)


def validate_request(
    additional_config: Any, extra_args: Any, num_speculative_tokens: int | None = None
) -> None:
    """Raise vLLM's validation error if a request asks for a rule this engine cannot serve."""
    from vllm.exceptions import VLLMValidationError

    from autojudge.errors import AutoJudgeError
    from autojudge.vllm_plugin.config import request_config, request_overrides, resolve_config

    if request_overrides(extra_args) is None:
        return
    engine = resolve_config(additional_config, os.environ)
    try:
        if engine is None:
            raise AutoJudgeError("autojudge: this engine did not enable the plugin; no rule to override")
        request_config(engine, extra_args, num_speculative_tokens)
    except AutoJudgeError as error:
        raise VLLMValidationError(str(error), parameter="vllm_xargs") from None


# --- worker: the decision ---------------------------------------------------------------------


def patch_rejection_sample() -> None:
    """Let an open judge step decide verification (installed by the judge runner)."""
    import torch
    from vllm.v1.sample import rejection_sampler as module

    from autojudge.rules.verification import greedy_verify, request_of_row
    from autojudge.vllm_plugin.runner import UnhookedVerificationError
    from autojudge.vllm_plugin.step import ACTIVE

    original = module.rejection_sample
    if is_patched(original):
        return
    signature = inspect.signature(original)
    draw_uniforms = module.generate_uniform_probs

    def rejection_sample(*args: Any, **kwargs: Any) -> torch.Tensor:
        ctx = ACTIVE.get()
        if ctx is None:
            return original(*args, **kwargs)
        a = signature.bind(*args, **kwargs).arguments
        metadata = a["sampling_metadata"]
        draft, target_logits, cu = a["draft_token_ids"], a["target_logits"], a["cu_num_draft_tokens"]
        ctx.decided = True
        if metadata.all_greedy:
            return ctx.decide_greedy(draft, target_logits, cu, a["max_spec_len"], a["bonus_token_ids"])
        row_temperature = metadata.temperature[request_of_row(cu, draft.shape[0])]
        sampled = row_temperature != module.GREEDY_TEMPERATURE
        uniform = draw_uniforms(draft.shape[0], a["num_draft_tokens"], metadata.generators, draft.device)
        accepted, choice, forced = ctx.decide_sampled(
            draft, target_logits, cu, row_temperature, sampled, uniform, a["draft_probs"]
        )
        ours = None  # before vLLM's kernels run: they may write into their inputs
        if not metadata.all_random:
            ours = greedy_verify(
                draft, cu, a["max_spec_len"], target_logits, a["bonus_token_ids"], accepted, choice
            )
        handed: list[bool] = []

        def hand_forced(*_: Any, **__: Any) -> torch.Tensor:
            handed.append(True)
            return forced

        module.generate_uniform_probs = hand_forced
        try:
            theirs = original(*args, **kwargs)
        finally:
            module.generate_uniform_probs = draw_uniforms
        if not handed:
            raise UnhookedVerificationError(
                "autojudge: vLLM's rejection_sample verified sampled requests without drawing its uniforms "
                f"through {REJECTION_SAMPLER_MODULE}.generate_uniform_probs; the rule's acceptances were lost"
            )
        if ours is None:
            return theirs
        return torch.where((metadata.temperature == module.GREEDY_TEMPERATURE).unsqueeze(1), ours, theirs)

    module.rejection_sample = _mark(rejection_sample, original)


def _expand_batch_to_tokens(
    x: Any, cu_num_tokens: Any, num_tokens: int, replace_from: int = 0, replace_to: int = 0
) -> Any:
    """vLLM's ``expand_batch_to_tokens`` in torch: x[b] repeated for each of request b's tokens, with
    ``replace_from`` values replaced by ``replace_to``."""
    import torch

    cu = cu_num_tokens.long()
    expanded = torch.repeat_interleave(x, torch.diff(cu, prepend=cu.new_zeros(1)), output_size=num_tokens)
    return torch.where(expanded == replace_from, torch.full_like(expanded, replace_to), expanded)


def patch_expand_batch_to_tokens(device: Any) -> bool:
    """Replace vLLM's ``expand_batch_to_tokens`` where it gives wrong values for float tensors (vLLM 0.32's
    CPU build, vllm-project/vllm issue 55005); True if it was replaced. Only a runner on ``device`` "cpu" is
    checked: elsewhere the function is a Triton kernel, which a CPU probe would crash."""
    import torch

    if torch.device(device).type != "cpu":
        return False
    from vllm.v1.sample import rejection_sampler as module

    if is_patched(module.expand_batch_to_tokens):
        return True
    probe = torch.tensor([0.0, 0.5, 2.0]), torch.tensor([1, 3, 4], dtype=torch.int32)
    expected = torch.tensor([1.0, 0.5, 0.5, 2.0])
    if torch.equal(module.expand_batch_to_tokens(*probe, 4, replace_from=0, replace_to=1), expected):
        return False
    logger.warning("autojudge: this vLLM's expand_batch_to_tokens is wrong for float tensors; replaced")
    module.expand_batch_to_tokens = _mark(_expand_batch_to_tokens, module.expand_batch_to_tokens)
    return True
