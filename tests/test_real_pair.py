"""Smoke test of the product on a real LLM: the smollm2-cpu preset at smoke size, through `dvc repro`.

The session fixture ``smollm2_run`` (conftest.py) applied the preset in a copy of the repository and ran
``dvc repro train@arith``: conversion of SmolLM2-135M-Instruct from its GGUF, distillation of a draft,
Algorithm 1 on the vLLM CPU engine, features and a head. Here the head decodes inside vLLM's
speculative decoding through the plugin.
"""

import json

import pytest

from autojudge.heads.artifact import load_head
from autojudge.models.pair import load_pair
from autojudge.models.prompts import encode_prompt
from autojudge.models.tokenizer import tokenizer_hash
from autojudge.params import load_params
from autojudge.tasks.arith import ArithTask

pytestmark = pytest.mark.slow

MAX_TOKENS = 24


def _metrics(run, name):
    return json.loads((run / "metrics" / name).read_text())


@pytest.fixture(scope="module")
def pair(smollm2_run):
    return load_pair("smollm2", smollm2_run / "models/smollm2/draft", smollm2_run / "models/smollm2/target")


def test_the_pipeline_distilled_a_draft_mined_and_trained_a_head_on_the_real_pair(smollm2_run, pair):
    distilled = _metrics(smollm2_run, "distill/smollm2.json")
    assert distilled["layers"] == pair.draft.config.num_hidden_layers == 2
    assert distilled["loss_last_10"] < distilled["loss_first_10"]
    assert 0.0 <= distilled["agreement"] <= 1.0 and 0.0 <= distilled["target_accuracy"] <= 1.0
    assert pair.draft.get_input_embeddings().weight.equal(pair.target.get_input_embeddings().weight)
    mining = _metrics(smollm2_run, "arith/mining.json")
    assert mining["problems"] == 4 and mining["mismatches"] > 0, mining
    head = load_head(smollm2_run / "heads/arith/head.safetensors")
    assert head.features.dimension == 576 and head.tokenizer_hash == tokenizer_hash(pair.tokenizer)
    assert head.pair == "smollm2-135m-distilled"


def test_the_mined_head_judges_inside_vllm_speculative_decoding(smollm2_run, pair):
    from autojudge.vllm_plugin.engine import decode, speculative_llm

    task = ArithTask(smollm2_run / "data/arith")
    prompts = [encode_prompt(pair.tokenizer, task.build_prompt(e), True) for e in task.load_split("test", 2)]
    head = str(smollm2_run / "heads/arith/head.safetensors")
    vllm = load_params(smollm2_run / "params.yaml").mining.vllm
    rule = {"rule": "judge", "judge_head": head}
    llm = speculative_llm(
        pair.target_path, pair.draft_path, 4, rule, vllm.engine_kwargs, in_process=vllm.in_process
    )
    overrides = {0.0: {"threshold": 0.0}, None: {}, 1.0: {"threshold": 1.0}}  # never, the head's own, always
    try:
        runs = {
            threshold: decode(llm, prompts, MAX_TOKENS, pair.eos_token_ids, {"rule": "judge", **override})
            for threshold, override in overrides.items()
        }
    finally:
        llm.llm_engine.engine_core.shutdown()
    accepted = {t: sum(r.accepted_draft_tokens for r in results) for t, results in runs.items()}
    assert accepted[0.0] <= accepted[None] <= accepted[1.0]
    assert accepted[1.0] > accepted[0.0]  # the draft mismatches the target, and the judge let them through
    for results in runs.values():
        assert all(0 < len(r.tokens) <= MAX_TOKENS for r in results)
