"""The toy deployment on a real Prefect server and process worker survives losing its worker.

The run itself is the session fixture ``deployed_pipeline`` (tests/pipeline_run.py): the worker is
stopped with SIGTERM while mining has finished some problems and not others, and a second worker
finishes the flow run. tests/test_pipeline.py checks the pipeline's outputs in the same checkout.
"""

from __future__ import annotations

import json

import pytest
from pipeline_run import MODEL_NAMES, PIPELINE_PARAMS, TASKS, model_versions


@pytest.mark.slow
def test_deployment_run_survives_a_worker_restart_and_registers_a_model(deployed_pipeline):
    run = deployed_pipeline
    assert run.state == "COMPLETED", f"flow run ended {run.state}: {run.state_message}"
    assert run.run_count == 2  # started by the first worker, finished by the second

    assert run.finished_at_kill
    assert len(run.finished_at_end) == len(TASKS) * PIPELINE_PARAMS["mining.problems"]
    finished_before = {path: run.finished_at_end[path] for path in run.finished_at_kill}
    assert finished_before == run.finished_at_kill  # finished problems were not mined again

    for task in TASKS:
        registered = json.loads((run.workdir / "registry" / task / "registered.json").read_text())
        versions = model_versions(run.workdir, registered["model_name"])
        assert [str(v["version"]) for v in versions] == [registered["version"]] == ["1"]
        assert versions[0]["card"]["model_name"] == MODEL_NAMES[task]
        assert versions[0]["description"]  # the card's markdown

        kind, markdown = run.artifacts[f"registered-model-{task}"]
        assert kind == "markdown" and f"{MODEL_NAMES[task]} version 1" in markdown
        assert versions[0]["description"] in markdown
