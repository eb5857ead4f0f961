"""The GPU energy cross-check: its comparison, its refusal without a GPU, and the committed H100 figures."""

from __future__ import annotations

import json

import pytest
import torch

from autojudge.bench.energy import EnergyReading
from autojudge.bench.energy_check import cross_check, relative_difference
from autojudge.errors import AutoJudgeError


def test_relative_difference_of_two_readings():
    nvml = EnergyReading(available=True, source="nvml", joules=200.0)
    smi = EnergyReading(available=True, source="nvidia-smi", joules=195.0)
    assert relative_difference(nvml, smi) == pytest.approx(0.025)
    assert relative_difference(nvml, EnergyReading.unavailable("no GPU")) is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_cross_check_refuses_without_a_gpu():
    with pytest.raises(AutoJudgeError, match="needs a CUDA GPU"):
        cross_check(seconds=0.1)


def test_committed_h100_cross_check_agrees_within_five_percent(repo):
    """The figures measured on a lent H100: both sources read, and they agree under load and at idle."""
    report = json.loads((repo / "results" / "energy_check_h100.json").read_text())
    assert report["gpu"].startswith("NVIDIA H100") and report["date"] and report["command"]
    for phase in ("idle", "load"):
        figures = report["phases"][phase]
        assert figures["nvml"]["source"] == "nvml" and figures["nvidia_smi"]["source"] == "nvidia-smi"
        assert figures["nvidia_smi"]["samples"] >= 2 * report["seconds_per_phase"]
        assert figures["relative_difference"] < 0.05
    idle, load = (report["phases"][p]["nvml"]["mean_watts"] for p in ("idle", "load"))
    assert load > 3 * idle  # the load is real: the meter sees it
