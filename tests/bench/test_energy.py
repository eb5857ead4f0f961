"""The GPU energy meter: nvidia-smi parsing, integration over time, and the no-GPU path (for real)."""

from __future__ import annotations

import itertools
import shutil
import time
from types import SimpleNamespace

import pytest

from autojudge.bench.energy import EnergyReading, NvmlCounter, PowerMeter, parse_power_csv, trapezoid_joules
from autojudge.errors import InputError

# `nvidia-smi --query-gpu=name,power.draw --format=csv,noheader,nounits` as printed by real drivers.
TWO_H100 = "NVIDIA H100 80GB HBM3, 69.78\nNVIDIA H100 80GB HBM3, 312.40\n"
A100_NOT_AVAILABLE = "NVIDIA A100-SXM4-80GB, [N/A]\n"
MIXED = "Tesla T4, 27.41\nNVIDIA GeForce GTX 1080, [Not Supported]\n\n"


class ListSampler:
    """Returns the given readings in turn, repeating the last one."""

    def __init__(self, *outputs: str) -> None:
        self.outputs = outputs
        self.calls = 0

    def read(self):
        output = self.outputs[min(self.calls, len(self.outputs) - 1)]
        self.calls += 1
        return parse_power_csv(output)


def ticking(step: float):
    """A clock that advances ``step`` seconds at each call."""
    counter = itertools.count()
    return lambda: step * next(counter)


def test_parses_several_gpus() -> None:
    assert parse_power_csv(TWO_H100) == [("NVIDIA H100 80GB HBM3", 69.78), ("NVIDIA H100 80GB HBM3", 312.4)]


def test_not_available_values_are_unknown_not_zero() -> None:
    assert parse_power_csv(A100_NOT_AVAILABLE) == [("NVIDIA A100-SXM4-80GB", None)]
    assert parse_power_csv(MIXED) == [("Tesla T4", 27.41), ("NVIDIA GeForce GTX 1080", None)]


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("NVIDIA H100 80GB HBM3 69.78\n", "line 1: expected '<name>, <watts>'"),
        ("Tesla T4, 27.41\nTesla T4, lots\n", "line 2: power 'lots' is not a number"),
        (", 12.0\n", "line 1: expected"),
        ("Tesla T4, -3\n", "negative power"),
        ("\n\n", "lists no GPU"),
    ],
)
def test_malformed_output_is_a_clear_error(output: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_power_csv(output)


def test_trapezoid_rule() -> None:
    assert trapezoid_joules([(0.0, 100.0), (2.0, 200.0), (3.0, 200.0)]) == pytest.approx(300 + 200)
    assert trapezoid_joules([(5.0, 80.0)]) == 0


def test_meter_integrates_summed_power_over_the_block() -> None:
    # A long interval: exactly the entry and exit samples, at clock readings 1 and 3 (2 s apart).
    with PowerMeter(interval=60, sampler=ListSampler(TWO_H100), clock=ticking(1.0)) as meter:
        pass
    reading = meter.reading
    assert reading.available and reading.source == "nvidia-smi"
    assert reading.gpus == ["NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"]
    assert reading.samples == 2 and reading.seconds == pytest.approx(2.0)
    assert reading.joules == pytest.approx(2.0 * (69.78 + 312.4))
    assert reading.mean_watts == pytest.approx(69.78 + 312.4)
    assert reading.joules_per_1k_tokens(500) == pytest.approx(2 * reading.joules)


@pytest.mark.timeout(30)  # the loops below wait for the meter's thread: a broken meter must not hang CI
def test_meter_samples_in_the_background() -> None:
    sampler = ListSampler("Tesla T4, 70\n")
    with PowerMeter(interval=0.01, sampler=sampler) as meter:
        while sampler.calls < 5:
            time.sleep(0.001)
    assert meter.reading.samples >= 5
    assert meter.reading.mean_watts == pytest.approx(70.0)
    assert meter.reading.joules == pytest.approx(70.0 * meter.reading.seconds)


@pytest.mark.timeout(30)
def test_samples_with_unknown_power_are_skipped() -> None:
    sampler = ListSampler("Tesla T4, 30\n", "Tesla T4, [N/A]\n", "Tesla T4, 30\n")
    with PowerMeter(interval=0.01, sampler=sampler) as meter:
        while sampler.calls < 4:
            time.sleep(0.001)
    reading = meter.reading
    assert reading.available and reading.skipped_samples == 1
    assert reading.samples == sampler.calls - 1
    assert reading.mean_watts == pytest.approx(30.0)


def test_unknown_power_everywhere_is_not_available_never_zero() -> None:
    with PowerMeter(interval=0.01, sampler=ListSampler(A100_NOT_AVAILABLE)) as meter:
        pass
    assert not meter.reading.available
    assert meter.reading.joules is None and meter.reading.joules_per_1k_tokens(1000) is None
    assert "reported power as not available" in meter.reading.reason


def test_malformed_output_during_a_run_is_reported_with_its_message() -> None:
    with PowerMeter(interval=60, sampler=ListSampler("Tesla T4, 20\n", "garbage\n")) as meter:
        pass
    assert not meter.reading.available
    assert "expected '<name>, <watts>'" in meter.reading.reason


def test_without_nvidia_smi_the_reading_says_why(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a real PATH with no nvidia-smi on it
    with PowerMeter(use_nvml=False) as meter:
        pass
    assert meter.reading.as_dict() == EnergyReading.unavailable("nvidia-smi not found on PATH").as_dict()


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_default_meter_on_a_machine_without_gpu() -> None:
    with PowerMeter() as meter:
        pass
    reading = meter.reading.as_dict()
    assert reading["available"] is False and reading["joules"] is None
    assert "NVML:" in reading["reason"] and "nvidia-smi not found" in reading["reason"]


def fake_nvml() -> SimpleNamespace:
    """The few pynvml calls the counter makes: two GPUs whose energy counters rise 1500 mJ per read."""
    reads = itertools.count(1)
    return SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetHandleByIndex=lambda index: index,
        nvmlDeviceGetName=lambda handle: b"NVIDIA A100-SXM4-80GB",
        nvmlDeviceGetTotalEnergyConsumption=lambda handle: 1500 * next(reads),
    )


def test_nvml_counter_differences_are_joules(monkeypatch) -> None:
    counter = NvmlCounter(fake_nvml())
    monkeypatch.setattr("autojudge.bench.energy._nvml_counter", lambda: (counter, ""))
    with PowerMeter(clock=ticking(2.0)) as meter:
        pass
    reading = meter.reading
    assert reading.source == "nvml" and reading.gpus == ["NVIDIA A100-SXM4-80GB"] * 2
    # reads 1-2 at construction, 3-4 at entry, 5-6 at exit: each GPU's counter rose by 3000 mJ
    assert reading.joules == pytest.approx(6.0)
    assert reading.mean_watts == pytest.approx(6.0 / 2.0)


@pytest.mark.slow
def test_reference_benchmark_reports_energy_per_method(toy_pair, arith_task) -> None:
    from autojudge.bench.reference import benchmark_reference_sd

    report = benchmark_reference_sd(toy_pair, arith_task, arith_task.load_split("test", 2), [4], 64, 1)
    energy = {name: figures["energy"] for name, figures in report["methods"].items()}
    assert set(energy) == {"target_greedy", "sd_exact_w4"}
    for reading in energy.values():
        if reading["available"]:
            assert reading["joules"] > 0 and reading["joules_per_1k_tokens"] > 0
        else:
            assert reading["reason"] and "joules" not in reading
