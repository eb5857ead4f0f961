"""``autojudge bench``, run as users run it, on the committed toy pair."""

import json

import pytest


def test_bench_vllm_refuses_a_plan_without_batch_size_1_before_any_engine(autojudge, repo, tmp_path):
    result = autojudge(
        "bench",
        "vllm",
        "--batch-size",
        "8",
        "--batch-size",
        "32",
        "--params",
        str(repo / "params.yaml"),
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "bench.batch_sizes" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_bench_batched_writes_both_engines_and_their_agreement(autojudge, eval_params, tmp_path):
    out = tmp_path / "batched.json"
    args = (
        "bench",
        "batched",
        "--limit",
        "2",
        "--repeats",
        "1",
        "--out",
        str(out),
        "--params",
        str(eval_params),
    )
    result = autojudge(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["requests"] == 2 * len(report["rules"]) and "fly" in " ".join(report["rules"])
    assert report["identical_outputs_and_passes"] == f"{report['requests']}/{report['requests']}"
    assert set(report["engines"]) == {"one_sequence", "batched"} and report["speedup"] > 0
    assert "speed-up" in result.stdout
