"""Cross-check of the meter's two sources on a real GPU: NVML's energy counter and integrated
``nvidia-smi`` power samples, read over the same blocks (the GPU idle, then under a matrix-product load).

The two sources are independent (a hardware counter, and the driver's power reading sampled by a
subprocess), so agreement within a few percent under load validates both the sampler and the
trapezoid integration that the benchmarks fall back to where NVML is missing.
"""

from __future__ import annotations

import subprocess
import time
from datetime import UTC, datetime
from typing import Any

from autojudge.bench.energy import EnergyReading, PowerMeter
from autojudge.errors import AutoJudgeError


def relative_difference(first: EnergyReading, second: EnergyReading) -> float | None:
    """|a - b| / a of two readings' joules; None when either is not available."""
    if first.joules is None or second.joules is None or first.joules == 0:
        return None
    return abs(first.joules - second.joules) / first.joules


def _matmul_load(seconds: float, size: int) -> int:
    """Back-to-back bf16 matrix products on the GPU for ``seconds``; returns how many ran."""
    import torch

    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    products = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for _ in range(10):
            a = torch.nn.functional.normalize(a @ a, dim=-1)
        torch.cuda.synchronize()
        products += 10
    return products


def _driver_version() -> str | None:
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip().splitlines()[0] if done.stdout.strip() else None


def cross_check(seconds: float = 20.0, size: int = 8192, interval: float = 0.1) -> dict[str, Any]:
    """Both sources over an idle block and a loaded block of ``seconds`` each."""
    import torch

    if not torch.cuda.is_available():
        raise AutoJudgeError("the energy cross-check needs a CUDA GPU (torch.cuda.is_available() is False)")
    phases: dict[str, Any] = {}
    for phase in ("idle", "load"):
        with PowerMeter(use_nvml=True) as nvml, PowerMeter(interval=interval, use_nvml=False) as smi:
            if phase == "load":
                products = _matmul_load(seconds, size)
            else:
                time.sleep(seconds)
        for name, meter in (("nvml", nvml), ("nvidia-smi", smi)):
            if meter.reading.source != name:
                raise AutoJudgeError(f"energy source {name} not available: {meter.reading.reason}")
        difference = relative_difference(nvml.reading, smi.reading)
        phases[phase] = {
            "nvml": nvml.reading.as_dict(),
            "nvidia_smi": smi.reading.as_dict(),
            "relative_difference": None if difference is None else round(difference, 4),
        }
        if phase == "load":
            phases[phase]["bf16_products"] = products
            phases[phase]["matrix_size"] = size
    return {
        "check": "GPU energy: NVML counter vs integrated nvidia-smi power samples, same blocks",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "gpu": torch.cuda.get_device_name(0),
        "driver": _driver_version(),
        "seconds_per_phase": seconds,
        "sample_interval_s": interval,
        "phases": phases,
    }
