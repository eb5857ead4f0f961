"""The judge worker: vLLM's own worker for this platform, with the judge runner swapped in.

vLLM builds workers from ``parallel_config.worker_cls``; an engine that enables the plugin gets
``autojudge.vllm_plugin.worker.JudgeWorker`` (set by the frontend, or by hand with
``--worker-cls``). After vLLM's ``init_device`` has built the model runner, the runner becomes the
judge runner (``runner.adopt_runner``), which refuses Model Runner V2.
"""

from __future__ import annotations

from typing import Any

from vllm.platforms import current_platform

from autojudge.vllm_plugin.runner import adopt_runner


def _platform_worker() -> type:
    if current_platform.is_cpu():
        from vllm.v1.worker.cpu_worker import CPUWorker

        return CPUWorker
    from vllm.v1.worker.gpu_worker import Worker

    return Worker


class JudgeWorker(_platform_worker()):  # type: ignore[misc]
    """vLLM's worker whose model runner verifies with an autojudge rule."""

    def init_device(self, *args: Any, **kwargs: Any) -> None:
        super().init_device(*args, **kwargs)
        self.model_runner = adopt_runner(self.model_runner)
