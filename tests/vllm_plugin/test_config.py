"""Plugin configuration and head checks, without starting vLLM."""

import logging

import pytest
import torch

from autojudge.errors import InputError, ModelPairError
from autojudge.features.spec import FeatureSpec
from autojudge.heads.artifact import JudgeHead
from autojudge.models.tokenizer import load_tokenizer, tokenizer_hash
from autojudge.vllm_plugin.config import PluginConfig, parse_config, request_config, resolve_config
from autojudge.vllm_plugin.heads import hidden_size, load_checked_head


def test_off_unless_an_engine_asks():
    assert resolve_config(None, {}) is None
    assert resolve_config({"other": 1}, {"AUTOJUDGE_VLLM_RULE": ""}) is None


def test_additional_config_wins_over_the_environment():
    environ = {"AUTOJUDGE_VLLM_RULE": "topk", "AUTOJUDGE_VLLM_TOP_K": "8"}
    assert resolve_config(None, environ) == PluginConfig("topk", top_k=8)
    chosen = resolve_config({"autojudge": {"rule": "judge", "judge_head": "h", "threshold": 0.5}}, environ)
    assert chosen == PluginConfig("judge", judge_head="h", threshold=0.5)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"rule": "greedy"}, "unknown rule 'greedy'"),
        ({"rule": "topk"}, "needs top_k >= 1"),
        ({"rule": "topk", "top_k": "many"}, "bad value"),
        ({"rule": "judge"}, "needs judge_head"),
        ({"rule": "fsd-kl"}, "rule 'fsd-kl' needs a threshold"),
        ({"rule": "fsd-tv", "threshold": 1.5}, r"threshold in \[0, 1\], got 1.5"),
        ({"rule": "judge", "judge_head": "h", "threshold": -5}, r"threshold in \[0, 1\], got -5"),
        ({"rule": "kl-mask", "threshold": 0.1, "confidence": 1.5}, r"confidence must be in \(0, 1\]"),
        ({"rule": "exact", "window": 3}, r"unknown keys \['window'\]"),
        ({"top_k": 3}, "must name a 'rule'"),
        ({"rule": "judge", "judge_head": "h", "threshold": "nan"}, "must be finite"),
        ({"rule": "fly", "threshold": 0.3, "fly_window_size": 0}, "fly_window_size must be at least 1"),
        ({"rule": "fly", "threshold": 0.3, "fly_entropy_top_k": 0}, "fly_entropy_top_k must be positive"),
    ],
)
def test_bad_engine_config_is_refused_by_name(raw, message):
    with pytest.raises(InputError, match=message):
        parse_config(raw)


def test_environment_errors_name_the_variables():
    with pytest.raises(InputError, match=r"AUTOJUDGE_VLLM_\* environment variables"):
        resolve_config(None, {"AUTOJUDGE_VLLM_RULE": "topk", "AUTOJUDGE_VLLM_TOP_K": "x"})


def test_request_overrides_change_the_rule_but_keep_the_engine_head():
    engine = PluginConfig("judge", judge_head="h", threshold=0.3)
    assert request_config(engine, None) == engine
    assert request_config(engine, {"autojudge": {"threshold": 0.0}}) == PluginConfig(
        "judge", judge_head="h", threshold=0.0
    )
    assert request_config(engine, {"autojudge": {"rule": "exact"}}) == PluginConfig("exact", judge_head="h")
    with pytest.raises(InputError, match=r"unknown keys \['judge_head'\]"):
        request_config(engine, {"autojudge": {"judge_head": "other"}})
    with pytest.raises(InputError, match="reads the drafter's logits, on an engine whose rule"):
        request_config(engine, {"autojudge": {"rule": "fsd-kl", "threshold": 0.1}})
    selfjudge = request_config(engine, {"autojudge_rule": "selfjudge"})  # a head like any other
    assert (selfjudge.rule, selfjudge.judge_head, selfjudge.threshold) == ("selfjudge", "h", None)
    with pytest.raises(InputError, match="needs judge_head"):
        request_config(PluginConfig("exact"), {"autojudge": {"rule": "judge"}})


def test_flat_request_keys_are_what_the_openai_server_can_carry():
    engine = PluginConfig("judge", judge_head="h", threshold=0.3)
    flat = {"autojudge_rule": "topk", "autojudge_top_k": "4", "other_plugin_key": 1}
    assert request_config(engine, flat) == PluginConfig("topk", top_k=4, judge_head="h")
    assert request_config(engine, {"autojudge_threshold": 0.9}).threshold == 0.9
    with pytest.raises(InputError, match=r"unknown keys \['window'\] in SamplingParams.extra_args"):
        request_config(engine, {"autojudge_window": 3})
    with pytest.raises(InputError, match="needs judge_head"):
        request_config(PluginConfig("exact"), {"autojudge_rule": "judge"})


def _save_head(directory, params, repo, source="target", target_size=None, vocabulary=None):
    tokenizer = load_tokenizer(repo / params.pair.target)
    target, draft = hidden_size(repo / params.pair.target), hidden_size(repo / params.pair.draft)
    spec = FeatureSpec(source, target_size or target, draft)
    fingerprint = vocabulary or tokenizer_hash(tokenizer)
    head = JudgeHead(torch.zeros(spec.dimension), 0.0, 0.5, spec, "toy", "arith", fingerprint)
    return head.save(directory)


def test_a_head_on_target_states_fits_every_proposer_and_warns_about_another(
    tmp_path, params, repo, caplog, request
):
    """The draft's size is not checked (the head does not read it: ngram has no draft model); a head mined
    with draft_model and served with eagle or ngram loads with one warning naming both."""
    logger = logging.getLogger("vllm.autojudge")  # vLLM's loggers do not propagate to caplog's
    logger.addHandler(caplog.handler)
    request.addfinalizer(lambda: logger.removeHandler(caplog.handler))
    target = repo / params.pair.target
    path = _save_head(tmp_path, params, repo)
    head = load_checked_head(str(path), target, hidden_size(target), "draft_model")
    assert head.features.source == "target" and head.proposer == "draft_model"
    assert not [r for r in caplog.records if "proposer" in r.getMessage()]
    load_checked_head(str(path), target, hidden_size(target), "ngram")
    warnings = [r.getMessage() for r in caplog.records if "proposer" in r.getMessage()]
    assert len(set(warnings)) == 1  # once (caplog may see it twice where vLLM's logger propagates)
    assert "draft_model proposer" in warnings[0] and "drafts with ngram" in warnings[0]


def test_mismatched_heads_are_refused_naming_head_and_models(tmp_path, params, repo):
    target = repo / params.pair.target
    size = hidden_size(target)
    wrong_size = _save_head(tmp_path / "size", params, repo, target_size=size + 8)
    with pytest.raises(
        ModelPairError, match=rf"judge head {wrong_size} .*target {target}.*expects hidden sizes target="
    ):
        load_checked_head(str(wrong_size), target, size, "draft_model")
    both = _save_head(tmp_path / "both", params, repo, source="both")
    with pytest.raises(ModelPairError, match="reads 'both' hidden states"):
        load_checked_head(str(both), target, size, "draft_model")
    with pytest.raises(ModelPairError, match="another tokenizer"):
        other = _save_head(tmp_path / "tok", params, repo, vocabulary="another")
        load_checked_head(str(other), target, size, "draft_model")
    with pytest.raises(InputError, match="judge head not found"):
        load_checked_head(str(tmp_path / "missing.safetensors"), target, size, "draft_model")


def test_fly_takes_vllm_upstreams_keys_per_engine_and_per_request():
    engine = parse_config({"rule": "fly", "fly_window_size": "4", "threshold": 0.5})
    assert (engine.fly_window_size, engine.threshold, engine.fly_entropy_top_k) == (4, 0.5, 3)
    assert engine.describe() == "fly(threshold=0.5, fly_window_size=4, fly_entropy_top_k=3)"
    request = request_config(engine, {"autojudge_threshold": 0.2}, num_speculative_tokens=8)
    assert request.threshold == 0.2 and request.fly_window_size == 4
    with pytest.raises(InputError, match=r"fly_window_size must be in \[1, 7\]"):
        request_config(engine, {"autojudge_fly_window_size": 8}, num_speculative_tokens=8)
