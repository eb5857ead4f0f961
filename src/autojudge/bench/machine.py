"""The machine a figure was measured on, as reports name it."""

from __future__ import annotations

import platform
from pathlib import Path


def processor_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (``model name`` of ``cpuinfo`` on Linux), else what ``platform`` knows."""
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return platform.processor() or platform.machine()
