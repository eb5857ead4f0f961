"""Session engines on the toy pair and a judge head on target features trained in the session.

Two vLLM engines for the whole session (in this process, as params say): vanilla
speculative decoding (plugin off) and one with the plugin on and a judge head, whose rule each
test picks per request. The judge engine gets its head as ``models:/...@candidate`` from a
session MLflow store, as a user would, so the frontend pins it. A clean checkout has no head: the
problems are mined once (Algorithm 1, with the vanilla engine as the lossless target), featurised on
target hidden states and fitted by the project's functions, as the mine/features/train stages do (the
paper's head here; the context head in test_context_head.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from autojudge.vllm_plugin.engine import decode, speculative_llm

MINED_PROBLEMS = 40
HEAD_MODEL = "autojudge-arith-plugin-test"


class SpeculativeTarget:
    """The mining engine interface over a lossless speculative engine: target greedy continuations."""

    name = "vllm-sd"

    def __init__(self, llm, eos_token_ids: set[int]) -> None:
        self.llm = llm
        self.eos_token_ids = eos_token_ids

    def continue_prefixes(self, prefixes: list[list[int]], max_new_tokens: list[int]) -> list[list[int]]:
        active = [i for i, cap in enumerate(max_new_tokens) if cap > 0]
        outputs: list[list[int]] = [[] for _ in prefixes]
        results = decode(
            self.llm, [prefixes[i] for i in active], [max_new_tokens[i] for i in active], self.eos_token_ids
        )
        for index, result in zip(active, results, strict=True):
            outputs[index] = result.tokens
        return outputs

    def close(self) -> None:
        """The session fixture shuts the engine down."""


def mine_toy(pair, task, params, llm) -> list:
    """Algorithm 1 on ``MINED_PROBLEMS`` train problems, the lossless ``llm`` as the target."""
    from autojudge.mining.search import ImportantTokenSearch, MiningProblem
    from autojudge.models.prompts import encode_prompt
    from autojudge.models.teacher_forced import DraftPredictor

    problems = [
        MiningProblem(e.id, encode_prompt(pair.tokenizer, task.build_prompt(e)))
        for e in task.load_split("train", MINED_PROBLEMS)
    ]
    search = ImportantTokenSearch(
        task,
        pair.tokenizer,
        SpeculativeTarget(llm, pair.eos_token_ids),
        DraftPredictor(pair.draft, pair.vocab_size, pair.pad_token_id, 32, None),
        params.mining.max_response_tokens,
        pair.eos_token_ids,
        pool_size=MINED_PROBLEMS,
    )
    return sorted(search.run(problems), key=lambda p: p.id)


def train_head(pair, params, mined, directory: Path, context: bool = False) -> Path:
    """A head on target features of the ``mined`` problems, fitted as stage train fits it: the paper's, or
    (``context``) the context head whose groups, weight and C cross-validation chooses (train.context)."""
    from autojudge.features.groups import token_class_table
    from autojudge.features.hidden_states import extract_features
    from autojudge.features.spec import PAPER_GROUPS, FeatureSpec, ordered_groups
    from autojudge.heads.fitting import fitted_head
    from autojudge.models.tokenizer import tokenizer_hash

    settings = params.train.context
    candidates = tuple(tuple(groups) for groups in settings.groups) if context else (PAPER_GROUPS,)
    groups = ordered_groups(*candidates)
    spec = FeatureSpec("target", pair.target.config.hidden_size, pair.draft.config.hidden_size, groups)
    table = token_class_table(pair.tokenizer) if "token_classes" in groups else None
    features, rows = extract_features(
        pair.target, pair.draft, mined, spec, pair.pad_token_id, 16, table, pair.vocab_size
    )
    labels = np.array([row.important for row in rows], dtype=int)
    problem_ids = np.array([row.problem_id for row in rows])
    weights = tuple(settings.important_weights) if context else (1.0,)
    _, head = fitted_head(
        params, features, labels, problem_ids, spec, (), tokenizer_hash(pair.tokenizer), candidates, weights,
        table, settings.c_grid if context else None,
    )  # fmt: skip
    return head.save(directory)


def _engine(repo: Path, params, rule_config):
    vllm = params.mining.vllm
    return speculative_llm(
        repo / params.pair.target,
        repo / params.pair.draft,
        params.decoding.window,
        rule_config,
        vllm.engine_kwargs,
        params.pair.dtype,
        vllm.max_model_len,
        in_process=vllm.in_process,
    )


@pytest.fixture(scope="session")
def vanilla_llm(repo, params):
    """vLLM draft-model speculative decoding with the plugin off."""
    llm = _engine(repo, params, None)
    yield llm
    llm.llm_engine.engine_core.shutdown()


@pytest.fixture(scope="session")
def mined_toy(vanilla_llm, toy_pair, arith_task, params) -> list:
    return mine_toy(toy_pair, arith_task, params, vanilla_llm)


@pytest.fixture(scope="session")
def target_head_path(mined_toy, toy_pair, params, tmp_path_factory) -> Path:
    return train_head(toy_pair, params, mined_toy, tmp_path_factory.mktemp("target_head"))


@pytest.fixture(scope="session")
def context_head_path(mined_toy, toy_pair, params, tmp_path_factory) -> Path:
    return train_head(toy_pair, params, mined_toy, tmp_path_factory.mktemp("context_head"), context=True)


@pytest.fixture(scope="session")
def context_llm(repo, params, context_head_path):
    """The plugin on with the context head as a file, served by ``rule: judge``. A session fixture: shutting
    an in-process engine down tears down vLLM's parallel groups that the session's other engines use."""
    llm = _engine(repo, params, {"rule": "judge", "judge_head": str(context_head_path)})
    yield llm
    llm.llm_engine.engine_core.shutdown()


def register_head(path: Path, threshold: float | None = None) -> str:
    """Register the head at ``path`` (its threshold replaced if given) with alias candidate; the version."""
    from autojudge.heads.artifact import load_head
    from autojudge.registry.promotion import register_version
    from autojudge.registry.runs import log_model_and_card, log_training_run

    if threshold is not None:
        head = load_head(path)
        head.threshold = threshold
        path = head.save(path.parent / f"threshold-{threshold}" / "head.safetensors")
    run_id = log_training_run(HEAD_MODEL, {}, {}, [path])
    uri = log_model_and_card(run_id, path, {}, "# test head\n", {}, [])
    return register_version(uri, HEAD_MODEL, "# test head\n", {}, "candidate")


@pytest.fixture(scope="session")
def head_store(tmp_path_factory):
    """A session MLflow store and head cache (environment variables restored at the end)."""
    root = tmp_path_factory.mktemp("mlflow")
    saved = {key: os.environ.get(key) for key in ("MLFLOW_TRACKING_URI", "AUTOJUDGE_HEAD_CACHE")}
    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{root / 'mlflow.db'}"
    os.environ["AUTOJUDGE_HEAD_CACHE"] = str(root / "pinned")
    import mlflow

    mlflow.set_tracking_uri(os.environ["MLFLOW_TRACKING_URI"])
    mlflow.create_experiment(HEAD_MODEL, artifact_location=(root / "artifacts").as_uri())
    yield root
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def register_candidate(head_store):
    """``register_head`` in the session store (moves the alias ``candidate``)."""
    return register_head


@pytest.fixture(scope="session")
def judge_llm(repo, params, target_head_path, head_store):
    """The plugin on, with the session's judge head as ``models:/...@candidate``."""
    register_head(target_head_path)
    llm = _engine(repo, params, {"rule": "judge", "judge_head": f"models:/{HEAD_MODEL}@candidate"})
    yield llm
    llm.llm_engine.engine_core.shutdown()


@pytest.fixture(scope="module")
def sampler():
    """vLLM's rejection_sample module with the plugin's patch installed, and vLLM's original function (no
    engine: the kernels' torch versions, as a CPU worker registers them)."""
    from vllm.platforms.cpu import CpuPlatform
    from vllm.v1.sample import rejection_sampler as module

    from autojudge.vllm_plugin.patches import patch_expand_batch_to_tokens, patch_rejection_sample

    CpuPlatform.register_triton_kernel_overrides()
    patch_expand_batch_to_tokens("cpu")
    patch_rejection_sample()
    return module, module.rejection_sample._autojudge_original
