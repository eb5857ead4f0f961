"""An engine that enables a rule gets the model runner the plugin patches, on a CUDA build too (issue 64).

vLLM 0.32 picks Model Runner V2 wherever Triton is installed, for draft_model, eagle and ngram alike; the
plugin patches the V1 runner. ``triton_build`` makes this CPU build choose as CUDA's does; each engine's
config is built by vLLM's frontend with the plugin loaded (no engine is started).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

import pytest
from triton_build import RUNNER_ENV, runner_and_worker, triton_build

from autojudge.vllm_plugin.compat import V1_RUNNER, V2_RUNNER, IncompatibleVllmError
from autojudge.vllm_plugin.patches import JUDGE_WORKER, PLATFORM_WORKERS

RULE = {"rule": "topk", "top_k": 4}
SELECTED = "selects vLLM's V1 model runner"


@pytest.fixture
def engine_args(repo, params):
    """vLLM's engine arguments for the toy pair with the proposer ``method``, and ``extra`` arguments."""
    from vllm.engine.arg_utils import EngineArgs

    def build(method: str = "draft_model", **extra):
        speculative = {"method": method, "num_speculative_tokens": 4, "max_model_len": 256}
        if method == "draft_model":
            speculative["model"] = str(repo / params.pair.draft)
        return EngineArgs(
            model=str(repo / params.pair.target),
            dtype="float32",
            max_model_len=256,
            speculative_config=speculative,
            **extra,
        )

    return build


@pytest.fixture
def selections(caplog, request) -> Callable[[], list[str]]:
    """The plugin's lines saying it selected the V1 runner, so far in the test."""
    logger = logging.getLogger("vllm.autojudge")  # vLLM's loggers do not propagate to caplog's
    logger.addHandler(caplog.handler)
    request.addfinalizer(lambda: logger.removeHandler(caplog.handler))
    # one record each: caplog may hold a record twice where vLLM's logger propagates to the root
    return lambda: [r.getMessage() for r in dict.fromkeys(caplog.records) if SELECTED in r.getMessage()]


@pytest.mark.parametrize("method", ["draft_model", "ngram"])
def test_a_dormant_engine_keeps_vllms_choice(engine_args, selections, method):
    with triton_build():
        runner, worker = runner_and_worker(engine_args(method))
        assert (runner, worker in PLATFORM_WORKERS) == (V2_RUNNER, True), worker
        assert RUNNER_ENV not in os.environ
    assert selections() == []


@pytest.mark.parametrize(
    ("method", "enabled_by", "cached"),
    [("draft_model", "additional_config", False), ("ngram", "environment", True)],
    ids=["draft_model-additional_config", "ngram-environment-vllm_env_cached"],
)
def test_an_enabled_engine_gets_the_v1_runner_and_the_judge_worker(
    engine_args, selections, method, enabled_by, cached
):
    """Enabled in ``additional_config`` or by ``AUTOJUDGE_VLLM_*``; also after an engine core in this process
    cached vLLM's environment (``enable_envs_cache``, as in-process engines do)."""
    from vllm import envs

    with triton_build():
        if cached:
            envs.enable_envs_cache()
        if enabled_by == "environment":
            os.environ.update({"AUTOJUDGE_VLLM_RULE": "topk", "AUTOJUDGE_VLLM_TOP_K": "4"})
            args = engine_args(method)
        else:
            args = engine_args(method, additional_config={"autojudge": RULE})
        assert runner_and_worker(args) == (V1_RUNNER, JUDGE_WORKER)
        assert os.environ[RUNNER_ENV] == "0"  # what the engine's processes inherit
    assert selections() == [
        f"autojudge: rule topk(top_k=4) {SELECTED}, which the plugin patches ({RUNNER_ENV}=0 set for this "
        "process and the engine's)"
    ]


def test_an_explicit_model_runner_v2_with_an_enabled_rule_is_refused_in_one_line(engine_args, selections):
    with triton_build(runner_env="1"), pytest.raises(IncompatibleVllmError) as refused:
        runner_and_worker(engine_args(additional_config={"autojudge": RULE}))
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("autojudge: the engine enabled rule topk(top_k=4) but cannot run it: ")
    assert f"this engine uses Model Runner V2, which the plugin does not patch (unset {RUNNER_ENV}" in message
    assert selections() == []
