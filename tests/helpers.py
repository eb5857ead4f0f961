"""Helpers shared by tests: parameter files with overrides, loopback ports, health checks and servers."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from autojudge.rules.build import build_rule
from autojudge.rules.config import RuleConfig


def set_params(path: Path, overrides: dict) -> None:
    """Apply dotted-key ``overrides`` (e.g. ``{"mining.problems": 8}``) to a params file in place."""
    params = yaml.safe_load(path.read_text())
    for dotted, value in overrides.items():
        section = params
        *parents, leaf = dotted.split(".")
        for key in parents:
            section = section.setdefault(key, {})
        section[leaf] = value
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def write_params(repo: Path, directory: Path, arith_dir: Path, overrides: dict) -> Path:
    """The project's params with absolute paths to the toy pair and ``arith_dir``, plus ``overrides``."""
    params = yaml.safe_load((repo / "params.yaml").read_text())
    path = directory / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    set_params(
        path,
        {
            "task.data_dir": str(arith_dir),
            "pair.draft": str(repo / params["pair"]["draft"]),
            "pair.target": str(repo / params["pair"]["target"]),
            **overrides,
        },
    )
    return path


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def healthy(url: str) -> bool:
    """Whether ``url``/health answers 200 (vLLM's and Prefect's servers both serve it)."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


SERVER_START_SECONDS = 420


@contextmanager
def server_process(
    command: Sequence[str], url: str, log: Path, cwd: Path | None = None, env: dict | None = None
) -> Iterator[None]:
    """Run ``command`` (a server on loopback) in its own process group until ``url``/health answers;
    fail with its log if it exits or does not come up; stop the group at exit."""
    with log.open("w") as output:
        server = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT, start_new_session=True, cwd=cwd,
            env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        )  # fmt: skip
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while not healthy(url):
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{' '.join(command[:4])} did not come up on {url}:\n{log.read_text()[-3000:]}")
            time.sleep(1)
        yield
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


@dataclass(frozen=True)
class Served:
    """A vLLM server the suite started: its base URL (``.../v1``), model name and engine rule."""

    url: str
    model: str
    rule: str


@contextmanager
def vllm_server(arguments: Sequence[str], log: Path, cwd: Path | None = None) -> Iterator[str]:
    """vLLM's OpenAI server on loopback with ``arguments`` (``vllm serve``'s, model first), yielding its URL.

    Run as its module (the CPU wheel's ``vllm`` script needs the distribution name ``vllm``) with the CPU
    build's settings appended by the caller.
    """
    port = free_port()
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", *arguments,
        "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with server_process(command, url, log, cwd):
        yield f"{url}/v1"


def cpu_server_arguments(params) -> list[str]:
    """What `vllm serve` needs on the CPU build besides a command's own flags (and per-request counters)."""
    vllm = params.mining.vllm
    return [
        "--max-model-len", str(vllm.max_model_len), "--enforce-eager",
        "--kv-cache-memory-bytes", str(vllm.engine_kwargs["kv_cache_memory_bytes"]),
        "--per-request-spec-decode-metrics", "summary",
    ]  # fmt: skip


def post_completion(url: str, body: dict) -> tuple[int, dict]:
    """POST ``body`` to ``url``/completions: (HTTP status, JSON answer), errors included."""
    request = urllib.request.Request(
        f"{url}/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def rule(name: str, threshold: float | None = None, window: int = 32, head=None, **keys):
    """The registry's rule ``name`` for windows of ``window`` draft tokens."""
    return build_rule(RuleConfig(name, threshold=threshold, **keys), window, head)


def reference_decode(pair, prompts: list[list[int]], rule, window: int, max_new_tokens: int) -> list:
    """The reference engine's generations of ``prompts`` under ``rule`` (None: the target alone), decoded in
    batches (tests/decoding/test_batched.py: the same tokens as one prompt at a time, in a sixth of the time)."""
    from autojudge.decoding.batched import BatchedDecoder, Request

    decoder = BatchedDecoder(
        pair.target, pair.draft, pair.vocab_size, pair.eos_token_ids, window, max_new_tokens
    )
    return decoder.generate([Request(list(prompt), rule) for prompt in prompts], progress=False)


# vLLM's float32 kernels move hidden states by ~1e-6, which flips a decision whose score lies that close to
# the threshold and changes a response from there on: the plugin and the reference engine agree within these
AGREEMENT_ACCURACY_TOLERANCE = 0.02 + 1e-9  # absolute accuracy (2 of 100 problems, plus float rounding)
AGREEMENT_MAT_TOLERANCE = 0.03  # relative MAT


def mean_accepted(results) -> float:
    """MAT of vLLM results: tokens per target pass."""
    return sum(len(r.tokens) for r in results) / sum(r.target_passes for r in results)


def assert_served_as_measured(
    label: str, ours, exact, reference, examples, task, tokenizer, min_identical: float = 0.0
) -> str:
    """The plugin's results ``ours`` agree with the reference engine's ``reference`` (accuracy and MAT within
    the tolerances above, at least ``min_identical`` of the responses token for token), both accepted
    mismatches and beat vLLM's exact SD (``exact``); the report."""

    def accuracy(responses) -> float:
        texts = [tokenizer.decode(tokens, skip_special_tokens=True) for tokens in responses]
        return sum(task.score(t, e) for t, e in zip(texts, examples, strict=True)) / len(examples)

    reference_mat = sum(g.stats.tokens for g in reference) / sum(g.stats.target_passes for g in reference)
    same = sum(g.tokens == r.tokens for g, r in zip(reference, ours, strict=True))
    vllm_accuracy, reference_accuracy = (
        accuracy([r.tokens for r in ours]),
        accuracy([g.tokens for g in reference]),
    )
    report = (
        f"vLLM {label}: accuracy {vllm_accuracy:.3f}, MAT {mean_accepted(ours):.3f}; reference: accuracy "
        f"{reference_accuracy:.3f}, MAT {reference_mat:.3f}; vLLM exact MAT {mean_accepted(exact):.3f}; lossy "
        f"accepts in the reference {sum(g.stats.accepted_mismatches for g in reference)}; identical responses "
        f"{same}/{len(ours)}"
    )
    print(report)
    assert sum(g.stats.accepted_mismatches for g in reference) > 0, report
    assert mean_accepted(ours) > mean_accepted(exact), f"vLLM accepted no mismatch: {report}"
    assert abs(vllm_accuracy - reference_accuracy) <= AGREEMENT_ACCURACY_TOLERANCE, report
    assert abs(mean_accepted(ours) - reference_mat) <= AGREEMENT_MAT_TOLERANCE * reference_mat, report
    assert same >= min_identical * len(ours), report
    return report


def head_agreement_decodes(llm, head_path: Path, pair, task, params, problems: int) -> tuple:
    """The first ``problems`` test problems decoded by the plugin engine ``llm`` (its own head, at its
    threshold), by it with rule exact, and by the reference engine with the head at ``head_path``; with
    the examples: what ``assert_served_as_measured`` compares."""
    from autojudge.heads.artifact import load_head
    from autojudge.models.prompts import encode_prompt
    from autojudge.rules.acceptance import JudgeRule
    from autojudge.vllm_plugin.engine import decode

    head = load_head(head_path)
    examples = task.load_split("test", problems)
    prompts = [encode_prompt(pair.tokenizer, task.build_prompt(e)) for e in examples]
    max_new = params.decoding.max_new_tokens
    ours = decode(llm, prompts, max_new, pair.eos_token_ids)
    exact = decode(llm, prompts, max_new, pair.eos_token_ids, override={"rule": "exact"})
    reference = reference_decode(pair, prompts, JudgeRule(head), params.decoding.window, max_new)
    return head, examples, ours, exact, reference
