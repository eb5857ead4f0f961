"""Session engines on the toy pair and a judge head on target features trained in the session.

Two vLLM engines for the whole session (in this process, as params say): vanilla
speculative decoding (plugin off) and one with the plugin on and a judge head, whose rule each
test picks per request. The judge engine gets its head as ``models:/...@candidate`` from a
session MLflow store, as a user would, so the frontend pins it. The committed heads read draft features too (which the plugin cannot
score), and a clean checkout has none: the head is mined (Algorithm 1, with the vanilla engine as
the lossless target), featurised on target hidden states and fitted by the project's functions,
as the mine/features/train stages do.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

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


def train_target_head(pair, task, params, llm, directory: Path) -> Path:
    """Mine ``MINED_PROBLEMS`` train problems, fit a head on target features, return its file."""
    from autojudge.features.hidden_states import extract_features
    from autojudge.features.spec import FeatureSpec
    from autojudge.heads.artifact import JudgeHead
    from autojudge.heads.training import fit_head
    from autojudge.mining.search import ImportantTokenSearch, MiningProblem
    from autojudge.models.prompts import encode_prompt
    from autojudge.models.teacher_forced import DraftPredictor
    from autojudge.models.tokenizer import tokenizer_hash

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
    mined = sorted(search.run(problems), key=lambda p: p.id)
    spec = FeatureSpec("target", pair.target.config.hidden_size, pair.draft.config.hidden_size)
    features, rows = extract_features(pair.target, pair.draft, mined, spec, pair.pad_token_id)
    labels = np.array([row.important for row in rows], dtype=int)
    groups = np.array([row.problem_id for row in rows])
    train = params.train
    fit = fit_head(
        features, labels, groups, train.c_grid, train.target_recall, train.validation_fraction, 3, train.seed
    )
    head = JudgeHead(
        torch.from_numpy(fit.weight),
        fit.bias,
        fit.threshold,
        spec,
        pair.name,
        task.name,
        tokenizer_hash(pair.tokenizer),
        {"validation_auc": fit.validation_auc, "rows": len(rows)},
    )
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
def target_head_path(vanilla_llm, toy_pair, arith_task, params, tmp_path_factory) -> Path:
    return train_target_head(
        toy_pair, arith_task, params, vanilla_llm, tmp_path_factory.mktemp("target_head")
    )


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
