"""Every shell command the documents show is one this repository can run as typed (issue 39).

Each line of a ``bash`` block in the pages tests/test_docs.py reads (README.md, ARCHITECTURE.md and
docs/*.md; backslash continuations joined, ``&&`` chains split, leading ``VAR=value`` assignments and
trailing comments dropped) must be one of the kinds below, and pass its check; a line of no known kind
fails the test, naming its page:

* ``autojudge ...``: parsed by the real command line, as typed: the command and subcommand exist, every
  option is one of theirs and every value converts (numbers, choices). ``[optional parts]`` are checked
  with and without, ``<placeholders>`` and upper-case ``T``-style ones stand for a value.
* a vLLM server (``vllm serve``, GPU; ``python -m vllm.entrypoints.openai.api_server``, the CPU build):
  its model and draft paths exist, its ``--speculative-config`` is JSON and its ``--additional-config``
  passes the plugin's own parser; a GPU command (and every one a committed ``plots/<task>/compare.md``
  prints) is parsed by vLLM's own ``vllm serve`` and its engine config built with Triton present, as on
  CUDA: it must get the plugin's V1 runner and judge worker (tests/triton_build.py); a command serving a
  comparison's recommendation is printed verbatim by the committed ``plots/<task>/compare.md`` (whose CPU
  form tests/evaluation/test_serving.py starts as printed), and a CPU-build command carries the flags that
  build needs and is the README's, which the suite starts as printed and asks for completions
  (``served_target``, tests/vllm_plugin/test_server.py).
* ``make <target>``: a target of the Makefile; ``dvc repro [stage[@key]]``: a stage of dvc.yaml whose
  ``@key`` is an entry of its ``foreach`` params in params.yaml or a preset.
* ``docker compose -f <file>``: the file exists; ``prefect ...``: the deployments, flow name and work
  pools of prefect.yaml; ``mlflow ui --backend-store-uri``: the project's store; ``export``: variables.

Every documented ``autojudge`` command also runs for real, as typed (its ``[optional parts]`` left out), on
a copy of what the suite's pipeline run leaves (``deployed_pipeline``), unless it is a template (a
``<placeholder>`` or ``T`` stands for a value) or ``LONG`` names why it cannot run in a minute; presets run
on the repository's own params.yaml, each undone with ``autojudge preset toy``. What this does not run: the
long or GPU commands of other kinds (``make repro``, the presets' ``dvc repro``, the cluster's).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import yaml
from test_docs import DOCS as PAGES
from test_docs import ROOT
from triton_build import check_gpu_command

from autojudge.cli.app import app
from autojudge.vllm_plugin.config import CONFIG_KEY, parse_config

BASH_BLOCK = re.compile(r"^```bash[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")
PLACEHOLDER = re.compile(r"<[^<>]+>")
SERVERS = (("vllm", "serve"), ("python", "-m", "vllm.entrypoints.openai.api_server", "--model"))
CPU_FLAGS = ("--max-model-len", "--enforce-eager", "--kv-cache-memory-bytes")
# documented autojudge commands that do not run in a minute on the toy pair, and why
LONG = {
    ("toy", "train"): "retrains the toy pair (tens of minutes)",
    ("toy", "measure"): "decodes every source's test split",
    ("bench",): "timed benchmarks (minutes)",
    ("finetune",): "the real SmolLM2 target (hours)",
    ("eagle", "train"): "an EAGLE head for the real SmolLM2 target (an hour)",
}
# documented outcomes besides success: a promotion the gate refuses, a rollback with nothing to roll back to
REFUSALS = {"promote": (1, "not promoted:"), "promote --rollback": (2, "error: ")}
# runs each command in one interpreter (the imports once), as the console script does: status and stderr
DRIVER = """
import contextlib, io, json, sys
from autojudge.cli.app import main
outcomes = []
for words in json.loads(sys.argv[1]):
    sys.argv, err = ["autojudge", *words], io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            main()
            status = 0
        except SystemExit as exit:
            status = exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 1
    outcomes.append([status, err.getvalue()])
print(json.dumps(outcomes))
"""


def commands(text: str) -> list[str]:
    """The shell commands of a page's bash blocks, one string each."""
    found = []
    for block in BASH_BLOCK.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            chain: list[list[str]] = [[]]
            for word in words:
                chain.append([]) if word == "&&" else chain[-1].append(word)
            for command in chain:
                while command and ASSIGNMENT.match(command[0]):
                    command = command[1:]
                if command:
                    found.append(shlex.join(command))
    return found


def documented() -> list[tuple[str, str]]:
    return [(page.relative_to(ROOT).as_posix(), c) for page in PAGES for c in commands(page.read_text())]


def _variants(words: list[str]) -> list[list[str]]:
    """The words with every ``[...]`` group left out, and with all of them in (brackets removed)."""
    without: list[str] = []
    with_all: list[str] = []
    depth = 0
    for word in words:
        depth += word.startswith("[")
        if word.strip("[]"):
            with_all.append(word.strip("[]"))
        if not depth:
            without.append(word)
        depth -= word.endswith("]")
    return [without, with_all]


def _filled(word: str) -> str:
    """A placeholder (``<setting>``, ``T``, ``N``) as a value."""
    if PLACEHOLDER.fullmatch(word) or re.fullmatch(r"[A-Z]", word):
        return "1"
    return word


def parse_autojudge(words: list[str]) -> None:
    """Parse ``autojudge`` arguments with the real command line (its options and values), executing
    nothing; raises what the command line would print."""
    command = typer.main.get_command(app)
    arguments, name = [_filled(w) for w in words], "autojudge"
    while hasattr(command, "commands"):  # a group: the next word names one of its commands
        assert arguments, f"autojudge: {name} needs a command"
        name, arguments = arguments[0], arguments[1:]
        assert name in command.commands, f"autojudge: no command {name}"
        command = command.commands[name]
    command.make_context(name, arguments, resilient_parsing=False)


def check_server(words: list[str], recommended: set[str]) -> None:
    gpu = words[:2] == ["vllm", "serve"]
    model = words[2] if gpu else words[4]
    options = dict(zip(words[3 if gpu else 5 :: 2], words[4 if gpu else 6 :: 2], strict=False))
    assert (ROOT / model).is_dir(), f"model not found: {model}"
    speculative = json.loads(options["--speculative-config"])
    assert (ROOT / speculative["model"]).is_dir(), f"draft not found: {speculative['model']}"
    plugin = json.loads(options["--additional-config"])[CONFIG_KEY]
    parse_config(plugin)
    if gpu:
        check_gpu_command(words, ROOT)
    else:
        assert all(flag in words for flag in CPU_FLAGS), f"the CPU build needs {CPU_FLAGS}"
        assert words == started_server(), "not the CPU command the suite starts (conftest's served_target)"
    if "judge_head" not in plugin:  # a comparison's recommendation, printed by compare.md
        assert shlex.join(words) in recommended, "no committed plots/<task>/compare.md prints this command"


def started_server() -> list[str]:
    """The README's CPU serving command, which conftest's ``served_target`` starts as printed."""
    cpu = [
        shlex.split(c) for page, c in documented() if page == "README.md" and c.startswith("python -m vllm")
    ]
    assert len(cpu) == 1, f"README.md shows {len(cpu)} CPU serving commands, the suite starts one"
    return cpu[0]


def _foreach_keys(source: str) -> set[str]:
    keys = set(yaml.safe_load((ROOT / "params.yaml").read_text()).get(source) or {})
    for preset in (ROOT / "presets").glob("*.yaml"):
        keys |= set(yaml.safe_load(preset.read_text()).get(source) or {})
    return keys


def check_dvc(words: list[str]) -> None:
    assert words[1] == "repro", "dvc: only `dvc repro` is documented"
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for target in words[2:]:
        name, _, key = target.partition("@")
        assert name in stages, f"no stage {name} in dvc.yaml"
        if key:
            source = stages[name]["foreach"].strip("${}")
            assert key in _foreach_keys(source), (
                f"no entry {key} of params {source} in params.yaml or a preset"
            )


def check_prefect(words: list[str]) -> None:
    deployments = yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]
    pools = {d["work_pool"]["name"] for d in deployments}
    if words[1:3] == ["deployment", "run"]:
        flow, _, deployment = words[3].partition("/")
        assert f'@flow(name="{flow}")' in (ROOT / "flows" / "pipeline.py").read_text(), f"no flow {flow}"
        assert deployment in {d["name"] for d in deployments}, f"no deployment {deployment} in prefect.yaml"
    elif words[1:3] in (["work-pool", "create"], ["worker", "start"]):
        pool = words[-1] if words[1] == "work-pool" else words[words.index("--pool") + 1]
        assert pool in pools, f"no work pool {pool} in prefect.yaml"
    else:
        assert words[1:] == ["--no-prompt", "deploy", "--all"], "an unknown prefect command"


def check(command: str, recommended: set[str]) -> None:
    """The command's own check (an AssertionError or a click error says why it fails)."""
    words = shlex.split(command)
    program = words[0]
    if program == "autojudge":
        for variant in _variants(words[1:]):
            parse_autojudge(variant)
    elif any(tuple(words[: len(s)]) == s for s in SERVERS):
        check_server(words, recommended)
    elif program == "make":
        makefile = (ROOT / "Makefile").read_text()
        assert re.search(rf"^{re.escape(words[1])}:", makefile, re.MULTILINE), f"no target {words[1]}"
    elif program == "dvc":
        check_dvc(words)
    elif program == "prefect":
        check_prefect(words)
    elif words[:3] == ["docker", "compose", "-f"]:
        assert (ROOT / words[3]).is_file(), f"no compose file {words[3]}"
    elif words[:2] == ["mlflow", "ui"]:
        assert words[2:] == ["--backend-store-uri", "sqlite:///mlflow/mlflow.db"], "not the project's store"
    elif program == "export":
        assert all(ASSIGNMENT.match(w) for w in words[1:]), "export takes VAR=value"
    else:
        raise AssertionError("a command of no known kind: add its check to tests/test_documented_commands.py")


@pytest.fixture(scope="module")
def recommended() -> set[str]:
    """The serving commands the committed comparisons print."""
    pages = sorted((ROOT / "plots").glob("*/compare.md"))
    assert pages, "no committed plots/<task>/compare.md"
    return {command for page in pages for command in commands(page.read_text())}


def test_the_pages_show_commands_of_every_kind() -> None:
    programs = {shlex.split(c)[0] for _, c in documented()}
    assert {"autojudge", "make", "dvc", "prefect", "vllm", "python"} <= programs, programs


@pytest.mark.parametrize(("page", "command"), documented(), ids=lambda value: value[:60])
def test_the_documented_command_works_as_typed(page: str, command: str, recommended: set[str]) -> None:
    try:
        check(command, recommended)
    except Exception as error:  # what the command line or a check refuses
        pytest.fail(f"{page}: `{command}`: {error}")


def with_stand_in_head(words: list[str], directory: Path) -> tuple[list[str], Path]:
    """A printed command and where to check it: as printed, from the repository, unless its ``judge_head`` is
    a pipeline output (``heads/<task>/...``) that a clean checkout lacks; then from ``directory``, holding the
    repository's models and at that path a stand-in head of the served target (its digest in the command),
    so that every other key is checked as printed."""
    import torch

    from autojudge.features.spec import FeatureSpec
    from autojudge.heads.artifact import JudgeHead
    from autojudge.models.tokenizer import load_tokenizer, tokenizer_hash
    from autojudge.vllm_plugin.heads import hidden_size
    from autojudge.vllm_plugin.pinning import file_sha256

    flag = words.index("--additional-config")
    config = json.loads(words[flag + 1])
    head = config["autojudge"].get("judge_head")
    if head is None or head.startswith("models:/") or (ROOT / head).exists():
        return words, ROOT
    assert head.startswith("heads/"), (
        f"a printed head that is neither registered nor a pipeline output: {head}"
    )
    target = ROOT / words[2]  # vllm serve <target>
    size = hidden_size(target)
    digest = tokenizer_hash(load_tokenizer(target, "target"))
    stand_in = JudgeHead(
        torch.zeros(size), 0.0, 0.5, FeatureSpec("target", size, size), "stand-in", "task", digest
    )
    (directory / "models").symlink_to(ROOT / "models")
    stand_in.save(directory / head)
    config["autojudge"]["judge_head_sha256"] = file_sha256(directory / head)
    return [*words[: flag + 1], json.dumps(config), *words[flag + 2 :]], directory


def test_every_gpu_command_a_comparison_prints_gets_the_judge_runner_on_cuda(
    recommended: set[str], tmp_path: Path
) -> None:
    gpu = sorted(c for c in recommended if c.startswith("vllm serve "))
    assert gpu, "no committed plots/<task>/compare.md prints a GPU command"
    for index, command in enumerate(gpu):
        (tmp_path / str(index)).mkdir()
        check_gpu_command(*with_stand_in_head(shlex.split(command), tmp_path / str(index)))


@pytest.mark.parametrize(
    "command",
    [
        "autojudge eval --rule judge --windoww 8",  # an option the command does not have
        "autojudge eval --window eight",  # a value that does not convert
        "autojudge evaluate",  # a command that does not exist
        "make deploy",
        "dvc repro train@gsm9k",
        "prefect deployment run autojudge-pipeline/nightly",
        "rm -rf models",
    ],
)
def test_a_command_that_does_not_exist_fails(command: str, recommended: set[str]) -> None:
    with pytest.raises(Exception):  # noqa: B017 -- the command line's own error types are typer's vendored click's
        check(command, recommended)


def test_a_gpu_server_without_the_plugin_fails_the_cuda_check() -> None:
    """Stock speculative decoding keeps vLLM's choice: Model Runner V2 on CUDA, not the judge runner."""
    (gpu,) = {c for page, c in documented() if page == "README.md" and c.startswith("vllm serve ")}
    words = shlex.split(gpu)
    plugin = words.index("--additional-config")
    del words[plugin : plugin + 2]
    stock = r"on CUDA it would run V2 \(vllm.v1.worker.gpu\) with worker vllm"
    with pytest.raises(AssertionError, match=stock):
        check_gpu_command(words, ROOT)


def test_a_cpu_server_the_suite_does_not_start_fails(recommended: set[str]) -> None:
    words = started_server()
    words[words.index("--kv-cache-memory-bytes") + 1] = "1073741824"
    with pytest.raises(AssertionError, match="not the CPU command the suite starts"):
        check(shlex.join(words), recommended)


def runnable() -> list[list[str]]:
    """The documented autojudge commands to run for real, once each, in page order: not a template (a
    ``<placeholder>`` or ``T`` stands for a value) and not ``LONG``; ``[optional parts]`` left out."""
    runs = []
    for command in dict.fromkeys(c for _, c in documented() if c.startswith("autojudge ")):
        words = _variants(shlex.split(command)[1:])[0]
        template = any(PLACEHOLDER.fullmatch(w) or re.fullmatch(r"[A-Z]", w) for w in words)
        if not template and not any(tuple(words[: len(key)]) == key for key in LONG):
            runs.append(words)
    return runs


def check_outcome(words: list[str], status: int, stderr: str) -> None:
    """Success, or a documented refusal (``REFUSALS``: its status and words); never a traceback."""
    typed = shlex.join(["autojudge", *words])
    assert "Traceback" not in stderr, f"`{typed}`: {stderr[-2000:]}"
    refusal = REFUSALS.get("promote --rollback" if "--rollback" in words else words[0])
    if status and refusal:
        assert (status, refusal[1] in stderr) == (refusal[0], True), f"`{typed}`: {stderr}"
    else:
        assert status == 0, f"`{typed}` exited with {status}: {stderr[-2000:]}"


@pytest.mark.slow  # the suite's pipeline run: not in make test-fast
def test_the_documented_autojudge_commands_run_on_the_pipelines_state(deployed_pipeline, tmp_path):
    """Every runnable command but the presets, in one interpreter (``DRIVER``), on a copy of the checkout
    the pipeline run left (its registry, heads, comparison and data)."""
    commands = [words for words in runnable() if words[0] != "preset"]
    assert {"eval", "promote", "params", "vllm"} <= {words[0] for words in commands}
    checkout = shutil.copytree(
        deployed_pipeline.workdir, tmp_path / "checkout", ignore=shutil.ignore_patterns(".dvc", ".git")
    )
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(commands)],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for words, (status, stderr) in zip(commands, json.loads(result.stdout.splitlines()[-1]), strict=True):
        check_outcome(words, status, stderr)


def test_the_documented_presets_apply_and_undo_on_the_repositorys_params(tmp_path):
    """A preset rewrites params only: each runs as the console script on the repository's own params.yaml,
    and ``autojudge preset toy`` after it leaves that file byte-identical."""
    presets = [words for words in runnable() if words[0] == "preset"]
    assert {words[1] for words in presets} >= {"gsm8k-llama", "smollm2-eagle", "toy"}
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    shutil.copytree(ROOT / "presets", tmp_path / "presets")
    script = str(Path(sys.executable).parent / "autojudge")
    for words in presets:
        for step in (words, ["preset", "toy"]):
            result = subprocess.run([script, *step], cwd=tmp_path, capture_output=True, text=True, timeout=60)
            check_outcome(step, result.returncode, result.stderr)
        assert (tmp_path / "params.yaml").read_bytes() == (ROOT / "params.yaml").read_bytes()
