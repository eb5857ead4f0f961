"""Evaluation on vLLM (``decoding.engine: vllm``): the sweep's settings as per-request rules of one engine."""

import pytest

from autojudge.errors import InputError
from autojudge.evaluation.setting import Setting
from autojudge.evaluation.sweep import decode_settings
from autojudge.evaluation.vllm_sweep import Job, job_of

PROBLEMS = 6


def test_jobs_share_an_engine_per_head_and_window(params):
    compare = params.compare
    jobs = [job_of(s, compare) for s in (Setting("fsd-tv", 8, threshold=0.5), Setting("exact", 8))]
    assert {job.group for job in jobs} == {("rules", 8)}
    assert job_of(Setting("judge", 8, threshold=0.3), compare).group == ("judge", 8)
    assert job_of(Setting("target"), compare) == Job("target")


def test_the_evaluation_engine_gets_the_benchmarks_engine_arguments(params, monkeypatch):
    """tensor_parallel_size and engine_kwargs reach every evaluation engine, as they reach the benchmark's."""
    from autojudge.engines import vllm_engine
    from autojudge.evaluation import vllm_sweep

    started = []
    monkeypatch.setattr(vllm_engine, "create_llm", lambda in_process, **kwargs: started.append(kwargs))
    vllm = params.mining.vllm.model_copy(update={"tensor_parallel_size": 4, "in_process": False})
    on_four = params.model_copy(update={"mining": params.mining.model_copy(update={"vllm": vllm})})
    vllm_sweep._llm(on_four, Job("target"), None)
    vllm_sweep._llm(on_four, job_of(Setting("exact", 8), params.compare), {"rule": "exact"})
    assert [kwargs["tensor_parallel_size"] for kwargs in started] == [4, 4]
    for kwargs in started:
        assert kwargs.items() >= vllm.engine_kwargs.items()


def test_an_eagle_pair_decodes_with_vllms_eagle_method_and_nothing_alone(params, toy_eagle_head, monkeypatch):
    from autojudge.engines import vllm_engine
    from autojudge.evaluation import vllm_sweep

    started = []
    monkeypatch.setattr(vllm_engine, "create_llm", lambda in_process, **kwargs: started.append(kwargs))
    eagle = params.model_copy(
        update={"pair": params.pair.model_copy(update={"proposer": "eagle", "draft": toy_eagle_head})}
    )
    vllm_sweep._llm(eagle, job_of(Setting("exact", 8), params.compare), {"rule": "exact"})
    speculative = started[0]["speculative_config"]
    assert (speculative["method"], speculative["model"]) == ("eagle", str(toy_eagle_head))
    with pytest.raises(InputError, match=r"pair\.proposer 'eagle' has no draft model"):
        vllm_sweep._llm(eagle, Job("draft"), None)


@pytest.mark.slow
def test_exact_sd_on_vllm_is_target_greedy_and_a_lossy_rule_accepts_more(
    params, toy_pair, arith_task, arith_dir, toy_target_greedy
):
    """One engine (its rule keeps the drafter's logits) decodes exact SD and FSD (TV) at 1.0, which
    accepts every mismatch, in one call: exact SD is token-identical to target greedy with no lossy
    accepts, FSD is faster and counts its lossy accepts."""
    task = params.task.model_copy(update={"data_dir": str(arith_dir)})
    on_vllm = params.model_copy(
        update={"task": task, "decoding": params.decoding.model_copy(update={"engine": "vllm"})}
    )
    examples = arith_task.load_split("test", PROBLEMS)
    settings = [Setting("exact", 8), Setting("fsd-tv", 8, threshold=1.0)]
    generations = decode_settings(on_vllm, toy_pair, settings, examples, {})
    exact, fsd = generations[:PROBLEMS], generations[PROBLEMS:]
    assert [g.tokens for g in exact] == [response for _, _, response in toy_target_greedy.items[:PROBLEMS]]

    def mat(decoded):
        return sum(g.stats.tokens for g in decoded) / sum(g.stats.target_passes for g in decoded)

    assert mat(fsd) > mat(exact) > 1.0
    # lossy accepts are counted on vLLM too (tokens that were not the target's top-1)
    assert sum(g.stats.accepted_mismatches for g in exact) == 0
    assert sum(g.stats.accepted_mismatches for g in fsd) > 0


@pytest.mark.slow
def test_a_hopeless_candidate_stops_on_vllm_and_the_others_decode_whole(
    params, arith_dir, arith_task, toy_pair, toy_target_greedy
):
    """The comparison's early stop on vLLM: FSD (TV) at 1.0 (every mismatch accepted) stops at its first
    problem lost against target greedy, its waiting requests aborted (two run at a time), while exact SD
    decodes every problem, token-identical to target greedy."""
    from autojudge.evaluation.early_stop import LossLimit
    from autojudge.evaluation.sweep import run_settings

    problems = 8
    engine = params.mining.vllm.model_copy(
        update={"engine_kwargs": {**params.mining.vllm.engine_kwargs, "max_num_seqs": 2}}
    )
    on_vllm = params.model_copy(
        update={
            "task": params.task.model_copy(update={"data_dir": str(arith_dir)}),
            "decoding": params.decoding.model_copy(update={"engine": "vllm"}),
            "mining": params.mining.model_copy(update={"vllm": engine}),
        }
    )
    items = toy_target_greedy.items[:problems]
    texts = [toy_pair.tokenizer.decode(tokens, skip_special_tokens=True) for _, _, tokens in items]
    reference = arith_task.scores(texts, arith_task.load_split("test", problems))
    limit = LossLimit(list(reference), 0.0)  # one problem lost makes a candidate hopeless
    settings = [Setting("exact", 8), Setting("fsd-tv", 8, threshold=1.0)]
    (exact,) = run_settings(on_vllm, settings, "test", problems, None, loss_limit=limit)
    assert exact[0] == settings[0] and limit.stopped == {1}
    assert [p.correct for p in exact[2]] == list(reference)
    assert limit.tallies[1].lost == 1 and limit.tallies[1].decoded < problems


@pytest.mark.slow
def test_stage_sampled_decodes_on_vllm_when_the_pipeline_does(params, toy_pair, arith_task, arith_dir):
    """With ``decoding.engine: vllm`` the sampled figures are vLLM's (the served path): FSD (TV) at 1.0
    accepts more per pass than exact speculative sampling there; only the shift comes from the reference
    engine, which can observe a rule it does not apply. The seeded requests' prompts exceed one step's token
    budget, where vLLM 0.32's CPU runner would chunk a prefill and fail to rewind the request's generator."""
    from autojudge.evaluation.sampled_decode import decode_sampled

    budget = {
        "max_model_len": 256,
        "engine_kwargs": {**params.mining.vllm.engine_kwargs, "max_num_batched_tokens": 256},
    }
    on_vllm = params.model_copy(
        update={
            "task": params.task.model_copy(update={"data_dir": str(arith_dir)}),
            "decoding": params.decoding.model_copy(update={"engine": "vllm"}),
            "sampled": params.sampled.model_copy(update={"seeds": [0], "limit": PROBLEMS}),
            "mining": params.mining.model_copy(update={"vllm": params.mining.vllm.model_copy(update=budget)}),
        }
    )
    rule = Setting("fsd-tv", params.compare.window, threshold=1.0)
    figures = decode_sampled(on_vllm, toy_pair, arith_task, [rule], {}, "test")
    assert figures["engine"] == "vllm" and figures["problems"] == PROBLEMS
    fsd = figures["methods"][rule.name]
    assert fsd["mat_gain_vs_exact_sd"]["value"] > 1.0
    assert fsd["shift_tv_per_token"]["value"] > 0.0
