"""The DVC pipeline end to end on small params: a full run, a no-op rerun, and a partial rerun.

The full run is the suite's one pipeline run, the session fixture ``deployed_pipeline``
(tests/pipeline_run.py): the toy deployment on a real Prefect server, each stage through DVC (mining on
the transformers engine, the benchmark on real vLLM engines, a real MLflow store; mining on vLLM through
the stage is the SmolLM2 smoke run's, conftest.smollm2_run). The tests of this module check its outputs,
then run ``dvc`` in the same checkout; they run in order.
"""

from __future__ import annotations

import json

import pytest
import yaml
from declared_params import covered, declared_params, recorded_reads, undeclared
from helpers import set_params
from pipeline_run import MODEL_NAMES, PIPELINE_PARAMS, TASKS, dvc, model_versions, stages_run

from autojudge.params.access import WHOLE

# stages that dump the whole params, and why that reads less than every key
DUMP_THE_WHOLE_PARAMS = {"compare": "evaluation.comparison_decode.decode_inputs keeps a few of its sections"}
EVERY_STAGE = {
    "prepare",
    "mine",
    "merge",
    "features",
    "train",
    "evaluate",
    "relabel",
    "train_selfjudge",
    "crossdomain",
    "compare",
    "sampled",
    "bench",
    "register",
}


def _versions(workdir, task: str = "arith") -> list[str]:
    return sorted(str(v["version"]) for v in model_versions(workdir, MODEL_NAMES[task]))


@pytest.mark.slow
def test_full_run_registers_a_head_per_task_with_its_card(deployed_pipeline):
    workdir = deployed_pipeline.workdir
    locked = yaml.safe_load((workdir / "dvc.lock").read_text())["stages"]
    assert {name.split("@")[0] for name in locked} == EVERY_STAGE
    assert {"mine@arith-0", "mine@pyfunc-0", "train@arith", "train@pyfunc", "register@pyfunc"} <= set(locked)
    for task in TASKS:
        registered = json.loads((workdir / "registry" / task / "registered.json").read_text())
        assert registered["model_name"] == MODEL_NAMES[task] and registered["alias"] == "candidate"
        evaluation = json.loads((workdir / "metrics" / task / "evaluate.json").read_text())
        assert {row["method"] for row in evaluation["settings"]} == {
            "judge",
            "topk",
            "exact",
            "target",
            "draft",
        }
        assert (workdir / "plots" / task / "accuracy_vs_mat.png").stat().st_size > 10_000
        mining = json.loads((workdir / "metrics" / task / "mining.json").read_text())
        assert mining["problems"] == PIPELINE_PARAMS["mining.problems"]
        assert mining["mismatches"] > mining["important"] > 0
        assert _versions(workdir, task) == ["1"]
    comparison = json.loads((workdir / "metrics" / "arith" / "compare.json").read_text())
    assert set(comparison["splits"]) == {"test", "shifted"}
    methods = {"judge", "selfjudge", "fsd-js", "fsd-js-published", "fly", "exact"}
    assert methods <= set(comparison["splits"]["shifted"]["table"])
    assert comparison["decisions"]["shifted"]["1"]["outside_competence"]  # the toy target solves none of it
    assert comparison["protocol"]["validation_examples"] == PIPELINE_PARAMS["compare.validation_limit"]
    assert (workdir / "plots" / "arith" / "compare" / "validation.png").stat().st_size > 10_000
    assert (workdir / "plots" / "arith" / "compare" / "shifted.png").stat().st_size > 10_000
    code = json.loads((workdir / "metrics" / "pyfunc" / "compare.json").read_text())  # no SelfJudge head
    assert set(code["splits"]) == {"test"} and "selfjudge" not in code["splits"]["test"]["table"]
    assert methods - {"selfjudge"} <= set(code["splits"]["test"]["table"])
    assert "Operating points chosen on" in (workdir / "plots" / "pyfunc" / "compare.md").read_text()
    for figures in (comparison, code):  # the ceiling: the first validation problems mined, every chosen point
        ceiling = figures["ceiling"]
        mined = ceiling["problems"] + ceiling["problems_without_answer"]
        assert mined == PIPELINE_PARAMS["compare.ceiling_problems"] and ceiling["split"] == "validation"
        assert ceiling["ratio"]["low"] <= ceiling["ratio"]["value"] <= ceiling["ratio"]["high"]
        chosen = {
            name for by in figures["chosen"].values() for m, name in by.items() if name and m != "exact"
        }
        assert {point["setting"] for point in ceiling["points"]} == chosen
        for point in ceiling["points"]:
            assert set(point["share_of_ceiling"]) == set(figures["splits"])
            assert all(share is None or 0 <= share <= 1 for share in point["accepted"].values())
    assert "### The ceiling: a perfect judge on" in (workdir / "plots" / "arith" / "compare.md").read_text()
    bench = json.loads((workdir / "metrics" / "bench.json").read_text())
    assert all(bench["sd_exact_equals_target"].values()) and "judge_overhead_percent" in bench["headline"]
    sampled = json.loads((workdir / "metrics" / "sampled.json").read_text())
    assert sampled["temperature"] == 0.7 and set(sampled["splits"]) == {"validation", "test"}
    test = sampled["splits"]["test"]
    assert test["problems"] == PIPELINE_PARAMS["sampled.limit"] and sampled["head_setting"] in test["methods"]
    assert {"accuracy_drop", "mat_gain_vs_exact_sd", "shift_tv_per_token"} <= set(
        test["methods"][sampled["head_setting"]]
    )
    card = model_versions(workdir, MODEL_NAMES["arith"])[0]["card"]
    assert (
        card["sampled"]["head_setting"] == sampled["head_setting"]
        and "sampled" not in model_versions(workdir, MODEL_NAMES["pyfunc"])[0]["card"]
    )


@pytest.mark.slow
def test_every_head_is_evaluated_on_every_domain_and_its_card_says_so(deployed_pipeline):
    workdir = deployed_pipeline.workdir
    crossdomain = json.loads((workdir / "metrics" / "crossdomain.json").read_text())
    domains = ["arith:test", "arith:variant", "arith:unseen", "pyfunc:test"]
    for task in TASKS:
        rows = crossdomain["heads"][task]
        assert [row["domain"] for row in rows] == domains
        assert [row["own"] for row in rows] == [d == f"{task}:test" for d in domains]
        for row in rows:
            assert row["examples"] == PIPELINE_PARAMS["crossdomain.limit"]
            drop = row["accuracy_drop"]
            assert drop["low"] <= drop["value"] <= drop["high"]
        [version] = model_versions(workdir, MODEL_NAMES[task])
        assert version["card"]["crossdomain"]["rows"] == rows
        assert "## Domain shift" in version["description"] and "pyfunc:test" in version["description"]
        # every task is compared; the benchmark runs on the primary task (params: task) only
        assert version["card"]["comparison"]["protocol"]["validation_split"] == "validation"
        assert "## Which judge to use" in version["description"]
        assert "### The ceiling: a perfect judge on" in version["description"]
        assert ("vllm_bench" in version["card"]) == (task == "arith")


@pytest.mark.slow
def test_every_stage_declares_the_params_it_reads(deployed_pipeline):
    """Each stage's recorded reads (``autojudge.params.access``) against its dvc.yaml ``params:`` list: DVC
    reruns a stage only when a key of that list changes."""
    workdir = deployed_pipeline.workdir
    reads = recorded_reads(deployed_pipeline.params_reads)
    assert {stage.split("@")[0] for stage in reads} == EVERY_STAGE
    declared = declared_params(workdir)
    missing = {stage: undeclared(by_task, declared[stage]) for stage, by_task in reads.items()}
    for stage, keys in missing.items():
        if stage.split("@")[0] in DUMP_THE_WHOLE_PARAMS:
            assert WHOLE in keys, (
                f"{stage} no longer dumps the whole params: drop it from DUMP_THE_WHOLE_PARAMS"
            )
            keys.remove(WHOLE)
    missing = {stage: keys for stage, keys in missing.items() if keys}
    assert not missing, f"stages read params that their dvc.yaml params: lists leave out: {missing}"


@pytest.mark.slow
def test_second_repro_does_nothing(deployed_pipeline):
    workdir = deployed_pipeline.workdir
    second = dvc(workdir, "repro")
    assert stages_run(second.stdout) == set()
    assert "up to date" in dvc(workdir, "status").stdout
    assert _versions(workdir) == ["1"]


@pytest.mark.slow
def test_changing_a_relabeling_parameter_invalidates_relabel_and_what_follows_only(deployed_pipeline):
    """A stage in the middle of the graph: not mining, features or the AutoJudge head (the benchmark times
    the comparison's recommendation, so it follows).

    DVC reruns a changed stage and everything downstream of it (the next test shows a rerun); this reads
    which stage DVC finds changed and what depends on it, without paying for the rerun itself."""
    import networkx as nx
    from dvc.repo import Repo

    workdir = deployed_pipeline.workdir
    original = (workdir / "params.yaml").read_text()
    set_params(workdir / "params.yaml", {"selfjudge.n_next": 10})
    try:
        changed = json.loads(dvc(workdir, "status", "--json").stdout)
        with Repo(str(workdir)) as repo:
            graph = repo.index.graph  # edges point from a stage to the stages it depends on
            [relabel] = [stage for stage in graph if stage.name in changed]
            rerun = {relabel.name, *(stage.name for stage in nx.ancestors(graph, relabel))}
    finally:
        (workdir / "params.yaml").write_text(original)
    # compare@pyfunc and register@pyfunc follow too: the stages of a foreach share their dependencies
    # (selfjudge/head among them), although only the primary task's comparison reads the SelfJudge head
    assert set(changed) == {"relabel"}
    assert {name.split("@")[0] for name in rerun} == {
        "relabel",
        "train_selfjudge",
        "compare",
        "sampled",
        "bench",
        "register",
    }
    assert "register@pyfunc" in rerun


@pytest.mark.slow
def test_changing_one_key_changes_exactly_the_stages_that_read_it(deployed_pipeline):
    """``dvc status`` after one key changes names the stages whose ``params:`` lists hold it, and those are
    the stages that read it."""
    workdir, key = deployed_pipeline.workdir, "decoding.max_new_tokens"
    declaring = {stage for stage, keys in declared_params(workdir).items() if covered(key, keys)}
    reading = {
        stage
        for stage, by_task in recorded_reads(deployed_pipeline.params_reads).items()
        if any(covered(key, [read]) or covered(read, [key]) for keys in by_task.values() for read in keys)
    }
    original = (workdir / "params.yaml").read_text()
    set_params(workdir / "params.yaml", {key: yaml.safe_load(original)["decoding"]["max_new_tokens"] + 1})
    try:
        changed = json.loads(dvc(workdir, "status", "--json").stdout)
    finally:
        (workdir / "params.yaml").write_text(original)
    assert set(changed) == declaring == reading
    assert {"train@arith", "evaluate@pyfunc", "compare@arith", "bench"} <= reading


@pytest.mark.slow
def test_changing_a_promotion_parameter_reruns_registration_only_and_registers_a_new_version(
    deployed_pipeline,
):
    workdir = deployed_pipeline.workdir
    set_params(workdir / "params.yaml", {"promote.min_mat_gain": 1.1})
    rerun = dvc(workdir, "repro")
    assert stages_run(rerun.stdout) == {"register"}
    assert _versions(workdir) == ["1", "2"]
