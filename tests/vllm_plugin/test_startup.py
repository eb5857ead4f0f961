"""Enabled means loud: an engine that enabled a rule refuses to start on a vLLM it cannot hook (real vLLM).

Each scenario runs in a fresh interpreter, as a user's process would: the frontend builds the
engine's config (vLLM loads the plugin there) and must fail with one clear message before any
engine process starts. ``autojudge vllm check`` reports the same facts without starting anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

SCENARIOS = r"""
import json, sys
from vllm import LLM
from vllm.v1.worker.gpu_model_runner import GPUModelRunner
from autojudge.vllm_plugin import compat

target, draft = sys.argv[1], sys.argv[2]
results = {}

def start(name, additional_config={"autojudge": {"rule": "topk", "top_k": 4}}):
    try:
        LLM(model=target, max_model_len=256, enforce_eager=True, kv_cache_memory_bytes=1 << 26,
            speculative_config={"method": "draft_model", "model": draft, "num_speculative_tokens": 4,
                                "max_model_len": 256},
            additional_config=additional_config)
        results[name] = "started"
    except Exception as error:
        results[name] = f"{type(error).__name__}: {error}"

real_version = compat.installed_vllm
compat.installed_vllm = lambda: "0.33.1"
start("version")
compat.installed_vllm = real_version

sample = GPUModelRunner._sample
del GPUModelRunner._sample
start("missing_hook")
GPUModelRunner._sample = sample

sample_tokens = GPUModelRunner.sample_tokens
GPUModelRunner.sample_tokens = lambda self, output: None
start("changed_signature")
GPUModelRunner.sample_tokens = sample_tokens

print("RESULTS " + json.dumps(results))
"""


CHECK = [sys.executable, "-c", "from autojudge.cli.app import main; main()", "vllm", "check"]


def _run(arguments, env_overrides=None, timeout=600):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env_overrides or {})}
    return subprocess.run(arguments, capture_output=True, text=True, timeout=timeout, env=env)


def test_an_enabled_engine_refuses_an_untested_or_changed_vllm(repo, params):
    done = _run(
        [sys.executable, "-c", SCENARIOS, str(repo / params.pair.target), str(repo / params.pair.draft)]
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULTS ")]
    assert lines, done.stdout[-2000:] + done.stderr[-3000:]
    results = json.loads(lines[0].removeprefix("RESULTS "))
    for name, expected in (
        ("version", r"vLLM 0.33.1 is outside the tested versions >=0.32.0,<0.33"),
        ("missing_hook", "GPUModelRunner._sample: missing"),
        ("changed_signature", "GPUModelRunner.sample_tokens: parameters ['grammar_output'] missing"),
    ):
        message = results[name]
        assert message.startswith(
            "IncompatibleVllmError: autojudge: the engine enabled rule topk(top_k=4) but cannot run it"
        )
        assert expected in message, message


def test_vllm_check_reports_version_runner_and_hook_points(repo):
    done = _run(CHECK)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "vLLM: 0.32.0 (plugin tested on >=0.32.0,<0.33), platform cpu" in done.stdout
    assert "model runner for models/toy_mixed/target + models/toy_mixed/draft: V1" in done.stdout
    assert "ok       vllm.v1.sample.rejection_sampler.rejection_sample" in done.stdout
    assert "MISSING" not in done.stdout
    assert "an engine enabling the plugin would start" in done.stdout


def test_vllm_check_says_why_an_engine_would_not_start(repo):
    """Model Runner V2 needs Triton, which the CPU build lacks: vLLM itself refuses it, and the check says so.

    (The refusal of V2 by the plugin is tested in test_runner.py: on CUDA vLLM would build it.)
    """
    done = _run(CHECK, {"VLLM_USE_V2_MODEL_RUNNER": "1"})
    assert done.returncode == 1, done.stdout + done.stderr[-2000:]
    assert (
        "model runner for models/toy_mixed/target + models/toy_mixed/draft: none (vLLM refused the config)"
        in done.stdout
    )
    assert "an engine enabling the plugin would NOT start: vLLM:" in done.stdout
    assert "Model Runner V2 requires Triton" in done.stdout
