"""prefect.yaml: the toy deployment on the cpu pool, a GSM8K/Llama one on the gpu pool, valid parameters."""

from __future__ import annotations

import pytest
import yaml
from prefect.flows import load_flow_from_entrypoint


@pytest.fixture(scope="module")
def deployments(repo) -> dict[str, dict]:
    config = yaml.safe_load((repo / "prefect.yaml").read_text())
    return {deployment["name"]: deployment for deployment in config["deployments"]}


def test_toy_runs_on_cpu_and_gsm8k_llama_on_gpu(deployments, repo):
    assert {name: d["work_pool"]["name"] for name, d in deployments.items()} == {
        "toy": "cpu",
        "gsm8k-llama": "gpu",
    }
    assert deployments["gsm8k-llama"]["parameters"]["preset"] == "gsm8k-llama"
    assert (repo / "presets" / "gsm8k-llama.yaml").is_file()


def test_schedules_are_off(deployments):
    assert all(not d.get("schedules") for d in deployments.values())


def test_parameters_are_valid_for_the_flow(deployments, repo):
    for deployment in deployments.values():
        path, _, function = deployment["entrypoint"].partition(":")
        flow = load_flow_from_entrypoint(f"{repo / path}:{function}")
        assert flow.name == "autojudge-pipeline"
        validated = flow.validate_parameters(deployment["parameters"])
        assert {key: validated[key] for key in deployment["parameters"]} == deployment["parameters"]


def test_stopped_workers_reschedule_their_runs(deployments):
    for deployment in deployments.values():
        variables = deployment["work_pool"]["job_variables"]
        assert variables["command"] == "prefect flow-run execute"
        assert variables["env"]["PREFECT_FLOW_RUN_EXECUTE_SIGTERM_BEHAVIOR"] == "reschedule"
