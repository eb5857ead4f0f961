"""GPU energy of a block of code: NVML's energy counter, else ``nvidia-smi`` power samples, else a reason.

Usage::

    with PowerMeter() as meter:
        run_benchmark_setting()
    meter.reading.as_dict()  # joules, mean watts, samples, GPU names, or available: false + reason

Sources, first that works:

* ``nvml``: ``pynvml`` (package ``nvidia-ml-py``, extra ``gpu``) reads each GPU's total-energy
  counter (millijoules since the driver loaded, Volta and newer) at entry and exit.
* ``nvidia-smi``: a background thread runs
  ``nvidia-smi --query-gpu=name,power.draw --format=csv,noheader,nounits`` every ``interval``
  seconds (plus once at entry and once at exit) and integrates the summed power over time with
  the trapezoid rule, as the paper's power table does (power times inference time).

Every GPU of the machine is read: the benchmark should be the only load on them.

Without either the reading is ``available: false`` with the reason; energy is never reported as 0.

Parsing rule for ``nvidia-smi`` output: blank lines are ignored; a power value of ``[N/A]``,
``N/A``, ``[Not Supported]`` or ``[Unknown Error]`` makes that whole sample unusable (it is
counted in ``skipped_samples``, not integrated: a GPU whose power is unknown is not 0 W); any
other line that is not ``<name>, <watts>`` is an error (`InputError` naming the line), which the
meter reports as ``available: false`` with that message.
"""

from __future__ import annotations

import itertools
import shutil
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from autojudge.errors import InputError

NVIDIA_SMI_QUERY = ["--query-gpu=name,power.draw", "--format=csv,noheader,nounits"]
UNKNOWN_VALUES = {"[n/a]", "n/a", "[not supported]", "[unknown error]"}

Reading = list[tuple[str, float | None]]  # (GPU name, watts or None when unknown), one per GPU


def parse_power_csv(text: str) -> Reading:
    """GPU names and power draws (W) from ``nvidia-smi --query-gpu=name,power.draw`` CSV output."""
    gpus: Reading = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, separator, value = line.rpartition(",")
        name, value = name.strip(), value.strip()
        if not separator or not name:
            raise InputError(f"nvidia-smi output line {number}: expected '<name>, <watts>', got {line!r}")
        if value.lower() in UNKNOWN_VALUES:
            gpus.append((name, None))
            continue
        try:
            watts = float(value)
        except ValueError:
            raise InputError(f"nvidia-smi output line {number}: power {value!r} is not a number") from None
        if watts < 0:
            raise InputError(f"nvidia-smi output line {number}: negative power {watts}")
        gpus.append((name, watts))
    if not gpus:
        raise InputError("nvidia-smi output lists no GPU")
    return gpus


def trapezoid_joules(samples: list[tuple[float, float]]) -> float:
    """Energy (J) of (seconds, watts) samples in time order, by the trapezoid rule."""
    return sum((t1 - t0) * (w0 + w1) / 2 for (t0, w0), (t1, w1) in itertools.pairwise(samples))


@dataclass
class EnergyReading:
    """What the meter measured over one block; ``joules`` is None exactly when not available."""

    available: bool
    source: str | None = None  # "nvml" or "nvidia-smi"
    reason: str | None = None  # why not available
    gpus: list[str] = field(default_factory=list)
    joules: float | None = None
    mean_watts: float | None = None
    seconds: float | None = None
    samples: int = 0
    skipped_samples: int = 0

    @classmethod
    def unavailable(cls, reason: str) -> EnergyReading:
        return cls(available=False, reason=reason)

    def joules_per_1k_tokens(self, tokens: int) -> float | None:
        """Energy per 1,000 generated tokens, None when not available or no tokens."""
        if self.joules is None or tokens <= 0:
            return None
        return 1000 * self.joules / tokens

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Sampler(Protocol):
    """One power reading of every GPU."""

    def read(self) -> Reading: ...


class NvidiaSmiSampler:
    """Runs ``nvidia-smi`` once per reading."""

    def __init__(self, executable: str) -> None:
        self.executable = executable

    def read(self) -> Reading:
        try:
            done = subprocess.run(
                [self.executable, *NVIDIA_SMI_QUERY], capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise InputError(f"nvidia-smi could not run: {error}") from None
        if done.returncode != 0:
            message = (done.stderr or done.stdout).strip().splitlines()
            raise InputError(
                f"nvidia-smi exited with {done.returncode}: {message[0] if message else 'no output'}"
            )
        return parse_power_csv(done.stdout)


class NvmlCounter:
    """NVML's per-GPU total-energy counters (mJ); construction fails with the reason if unusable."""

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml
        nvml.nvmlInit()
        count = nvml.nvmlDeviceGetCount()
        if count == 0:
            raise RuntimeError("NVML sees no GPU")
        self.handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        self.names = [_text(nvml.nvmlDeviceGetName(h)) for h in self.handles]
        self.millijoules()  # raises NotSupported on GPUs without the counter (pre-Volta)

    def millijoules(self) -> list[int]:
        return [int(self.nvml.nvmlDeviceGetTotalEnergyConsumption(h)) for h in self.handles]


def _text(name: str | bytes) -> str:
    return name.decode() if isinstance(name, bytes) else name


def _nvml_counter() -> tuple[NvmlCounter | None, str]:
    """NVML's counter if usable, else None and why not."""
    try:
        import pynvml
    except ImportError:
        return None, "NVML: pynvml not installed (package nvidia-ml-py)"
    try:
        return NvmlCounter(pynvml), ""
    except Exception as error:  # pynvml raises NVMLError subclasses for every driver condition
        return None, f"NVML: {error or type(error).__name__}"


class PowerMeter:
    """Context manager measuring GPU energy of its block; the result is in ``reading`` after exit."""

    def __init__(
        self,
        interval: float = 0.1,
        sampler: Sampler | None = None,
        clock: Callable[[], float] = time.monotonic,
        use_nvml: bool = True,
    ) -> None:
        if interval <= 0:
            raise InputError(f"power meter: interval must be > 0 seconds, got {interval}")
        self.interval = interval
        self.clock = clock
        self.reading: EnergyReading = EnergyReading.unavailable("meter has not run")
        self._sampler = sampler
        self._use_nvml = use_nvml and sampler is None
        self._nvml: NvmlCounter | None = None
        self._why_not: list[str] = []
        self._samples: list[tuple[float, Reading]] = []
        self._error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = 0.0
        self._start_mj: list[int] = []

    def _choose_source(self) -> None:
        if self._use_nvml:
            self._nvml, why = _nvml_counter()
            if self._nvml is not None:
                return
            self._why_not.append(why)
        if self._sampler is None:
            executable = shutil.which("nvidia-smi")
            if executable is None:
                self._why_not.append("nvidia-smi not found on PATH")
                return
            self._sampler = NvidiaSmiSampler(executable)

    def _sample(self) -> None:
        if self._error is not None:
            return
        try:
            reading = self._sampler.read()
        except InputError as error:
            self._error = str(error)
            return
        self._samples.append((self.clock(), reading))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __enter__(self) -> PowerMeter:
        self._choose_source()
        self._started = self.clock()
        if self._nvml is not None:
            self._start_mj = self._nvml.millijoules()
        elif self._sampler is not None:
            self._sample()
            self._thread = threading.Thread(target=self._loop, name="power-meter", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        seconds = self.clock() - self._started
        if self._nvml is not None:
            used = [end - start for start, end in zip(self._start_mj, self._nvml.millijoules(), strict=True)]
            joules = sum(used) / 1000
            self.reading = EnergyReading(
                available=True,
                source="nvml",
                gpus=self._nvml.names,
                joules=joules,
                mean_watts=joules / seconds if seconds > 0 else None,
                seconds=seconds,
                samples=2,
            )
            return
        if self._thread is None:
            self.reading = EnergyReading.unavailable("; ".join(self._why_not))
            return
        self._stop.set()
        self._thread.join()
        self._sample()
        self.reading = self._integrate()

    def _integrate(self) -> EnergyReading:
        if self._error is not None:
            return EnergyReading.unavailable(self._error)
        usable = [
            (t, sum(w for _, w in gpus)) for t, gpus in self._samples if all(w is not None for _, w in gpus)
        ]
        skipped = len(self._samples) - len(usable)
        if len(usable) < 2:
            return EnergyReading.unavailable(
                f"fewer than 2 usable nvidia-smi power samples ({skipped} of {len(self._samples)} "
                "reported power as not available)"
            )
        joules = trapezoid_joules(usable)
        span = usable[-1][0] - usable[0][0]
        return EnergyReading(
            available=True,
            source="nvidia-smi",
            gpus=[name for name, _ in self._samples[0][1]],
            joules=joules,
            mean_watts=joules / span if span > 0 else usable[0][1],
            seconds=span,
            samples=len(usable),
            skipped_samples=skipped,
        )


def median_energy(readings: list[EnergyReading], tokens: int) -> dict[str, Any]:
    """Median joules (and per 1,000 of ``tokens``) over repeated readings; not available if any one is not."""
    missing = next((r for r in readings if not r.available), None)
    if missing is not None or not readings:
        return {"available": False, "reason": missing.reason if missing else "no readings"}
    joules = statistics.median(r.joules for r in readings)
    return {
        "available": True,
        "source": readings[0].source,
        "gpus": readings[0].gpus,
        "joules": round(joules, 3),
        "joules_per_1k_tokens": round(1000 * joules / tokens, 3) if tokens > 0 else None,
        "mean_watts": round(statistics.median(r.mean_watts for r in readings if r.mean_watts is not None), 2),
    }
