"""An engine's config as vLLM 0.32's CUDA build resolves it, built on the CPU build (issue 64).

``VllmConfig.use_v2_model_runner`` (vllm/config/vllm.py) takes ``VLLM_USE_V2_MODEL_RUNNER`` when it is set,
else picks the V1 runner where ``HAS_TRITON`` is false (the CPU build), else Model Runner V2 unless the
engine uses something V2 lacks (draft_model, eagle and ngram engines do not). ``HAS_TRITON`` is the one
input it reads that differs on CUDA, so with it set vLLM's frontend, with the plugin loaded, chooses here
as it would there. The config is built as ``vllm serve`` builds it; no engine is started.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"


@contextlib.contextmanager
def triton_build(runner_env: str | None = None) -> Iterator[None]:
    """vLLM's config sees Triton and ``VLLM_USE_V2_MODEL_RUNNER`` = ``runner_env`` (None: unset), read
    afresh; the environment (which an enabled frontend changes) and vLLM's environment cache are restored."""
    import vllm.config.vllm as vllm_config
    from vllm import envs

    cached = hasattr(envs.__getattr__, "cache_clear")  # as vLLM tells (envs._is_envs_cache_enabled)
    saved = dict(os.environ)
    envs.disable_envs_cache()
    os.environ.pop(RUNNER_ENV, None)
    if runner_env is not None:
        os.environ[RUNNER_ENV] = runner_env
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(vllm_config, "HAS_TRITON", True)
            yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        envs.disable_envs_cache()
        if cached:
            envs.enable_envs_cache()


def serve_engine_args(words: list[str]) -> Any:
    """The engine arguments of a ``vllm serve ...`` command, parsed and validated by vLLM's own ``serve``."""
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    assert words[:2] == ["vllm", "serve"], f"not a vllm serve command: {words}"
    serve = ServeSubcommand()
    parser = FlexibleArgumentParser(prog="vllm")
    serve.subparser_init(parser.add_subparsers())
    args = parser.parse_args(words[1:])
    serve.validate(args)
    args.model = args.model_tag  # as ServeSubcommand.cmd does
    return AsyncEngineArgs.from_cli_args(args)


def runner_and_worker(engine_args: Any) -> tuple[str, str]:
    """The model runner and worker class of the engine vLLM's frontend (plugin loaded) builds; call inside
    ``triton_build`` for CUDA's. The engine's processes inherit the environment the frontend leaves and
    ask ``use_v2_model_runner`` again (``gpu_worker.Worker.__init__``): the same answer."""
    from autojudge.vllm_plugin.compat import runner_of

    config = engine_args.create_engine_config()
    return runner_of(config), str(config.parallel_config.worker_cls)


def check_gpu_command(words: list[str], cwd: Path) -> None:
    """A printed ``vllm serve`` command (paths relative to ``cwd``) gets the plugin's V1 runner and judge worker
    as CUDA's vLLM builds its engine, where vLLM alone would pick Model Runner V2 (an AssertionError says
    what it would run instead)."""
    from autojudge.vllm_plugin.compat import V1_RUNNER
    from autojudge.vllm_plugin.patches import JUDGE_WORKER

    with triton_build(), contextlib.chdir(cwd):
        runner, worker = runner_and_worker(serve_engine_args(words))
    expected = (V1_RUNNER, JUDGE_WORKER)
    assert (runner, worker) == expected, f"on CUDA it would run {runner} with worker {worker}"
