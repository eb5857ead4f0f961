"""The command line, run as users run it (a subprocess), on the committed toy pair."""

import json
import subprocess
import sys

import pytest
import torch

from autojudge.features.hidden_states import FeatureSpec
from autojudge.heads.artifact import JudgeHead
from autojudge.models.pair import load_tokenizer, tokenizer_hash


def _autojudge(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "autojudge", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def _eval_params(repo, tmp_path, arith_dir):
    params = tmp_path / "params.yaml"
    params.write_text(
        (repo / "params.yaml")
        .read_text()
        .replace("data_dir: data/arith", f"data_dir: {arith_dir}")
        .replace("models/toy_mixed/", f"{repo}/models/toy_mixed/")
    )
    return params


def _accept_everything_head(repo, path, tokenizer_of="models/toy_mixed/target"):
    """A head for the pair whose p(important) is about 0: the judge accepts every mismatch."""
    spec = FeatureSpec("target", 192, 128)
    fingerprint = tokenizer_hash(load_tokenizer(repo / tokenizer_of, "target"))
    return JudgeHead(torch.zeros(spec.dimension), -30.0, 0.5, spec, "toy-mixed", "arith", fingerprint).save(
        path
    )


def test_eval_prints_accuracy_and_mat(repo, tmp_path, arith_dir):
    params = _eval_params(repo, tmp_path, arith_dir)
    result = _autojudge(
        "eval",
        "--task",
        "arith",
        "--split",
        "test",
        "--rule",
        "topk",
        "--top-k",
        "2",
        "--window",
        "4",
        "--limit",
        "3",
        "--versus-exact",
        "--output",
        str(tmp_path / "out.json"),
        "--params",
        str(params),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "sd topk(k=2) W=4: accuracy" in result.stdout and "MAT" in result.stdout
    ratio = json.loads((tmp_path / "out.json").read_text())["versus_exact_sd"]["mat_ratio"]
    assert ratio["low"] <= ratio["value"] <= ratio["high"] and ratio["value"] >= 1.0  # top-2 accepts more
    assert "versus exact SD W=4: MAT" in result.stdout
    assert "problem" in result.stderr  # the progress bar


@pytest.mark.parametrize(
    ("rule", "extra", "described"),
    [
        ("fsd-tv", ["--threshold", "0.3"], "fsd"),
        ("fly", ["--threshold", "0.3"], "fly"),
        ("kl-mask", ["--threshold", "0.2"], "kl"),
        ("judge", [], "judge(threshold=0.5)"),
    ],
)
def test_eval_decodes_with_every_kind_of_rule_and_prints_intervals(
    repo, tmp_path, arith_dir, rule, extra, described
):
    params = _eval_params(repo, tmp_path, arith_dir)
    if rule == "judge":
        extra = ["--head", str(_accept_everything_head(repo, tmp_path / "head"))]
    out = tmp_path / "out.json"
    result = _autojudge(
        "eval", "--rule", rule, *extra, "--window", "8", "--limit", "4", "--samples", "200",
        "--output", str(out), "--params", str(params), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert described in result.stdout and "(95% bootstrap intervals over problems)" in result.stdout
    summary = json.loads(out.read_text())
    for name in ("accuracy", "mat"):
        figure = summary["intervals"][name]
        assert figure["low"] <= figure["value"] <= figure["high"]
    assert summary["intervals"]["mat"]["value"] == pytest.approx(summary["mat"])


def test_eval_refuses_a_head_of_another_pair_and_a_rule_without_its_threshold(repo, tmp_path, arith_dir):
    params = _eval_params(repo, tmp_path, arith_dir)
    other = _accept_everything_head(repo, tmp_path / "head", tokenizer_of="models/toy/target")
    result = _autojudge(
        "eval", "--rule", "judge", "--head", str(other), "--params", str(params), cwd=tmp_path
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"--head {other}" in result.stderr and "another tokenizer" in result.stderr
    result = _autojudge("eval", "--rule", "fsd-js", "--params", str(params), cwd=tmp_path)
    assert result.returncode == 2 and "--rule fsd-js needs --threshold" in result.stderr
    result = _autojudge("eval", "--rule", "fsd", "--params", str(params), cwd=tmp_path)
    assert result.returncode == 2 and "unknown rule 'fsd'; known: target, draft, exact" in result.stderr


def test_bad_input_is_one_clear_line_and_status_2(repo, tmp_path):
    (tmp_path / "params.yaml").write_text("decoding: {window: -1}\n")
    result = _autojudge("eval", "--params", str(tmp_path / "params.yaml"), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "decoding.window" in result.stderr
    assert "Traceback" not in result.stderr

    (tmp_path / "params.yaml").write_text("task: {name: arith, data_dir: nowhere}\n")
    result = _autojudge("eval", "--params", str(tmp_path / "params.yaml"), cwd=tmp_path)
    assert result.returncode == 2
    assert "data file not found: nowhere/test.jsonl" in result.stderr


def test_bench_vllm_refuses_a_plan_without_batch_size_1_before_any_engine(repo, tmp_path):
    result = _autojudge(
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
def test_bench_batched_writes_both_engines_and_their_agreement(repo, tmp_path, arith_dir):
    params = _eval_params(repo, tmp_path, arith_dir)
    out = tmp_path / "batched.json"
    args = ("bench", "batched", "--limit", "2", "--repeats", "1", "--out", str(out), "--params", str(params))
    result = _autojudge(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["requests"] == 2 * len(report["rules"]) and "fly" in " ".join(report["rules"])
    assert report["identical_outputs_and_passes"] == f"{report['requests']}/{report['requests']}"
    assert set(report["engines"]) == {"one_sequence", "batched"} and report["speedup"] > 0
    assert "speed-up" in result.stdout


def test_interval_recomputes_a_stored_interval_and_names_the_known_settings(tmp_path):
    from autojudge.evaluation.comparison import mat_ratio
    from autojudge.evaluation.sweep import ProblemFigures, figure_columns

    exact = [ProblemFigures(str(i), True, 60, 20 + i % 5) for i in range(20)]
    judge = [ProblemFigures(str(i), i % 7 != 0, 60, 8 + i % 4) for i in range(20)]
    problems = {"test": {"exact SD W=8": figure_columns(exact), "judge t=0.5 W=8": figure_columns(judge)}}
    path = tmp_path / "compare.json"
    path.write_text(json.dumps({"protocol": {"bootstrap_samples": 300, "seed": 1}, "problems": problems}))
    args = ("interval", "--file", str(path), "--split", "test")
    result = _autojudge(*args, "--a", "judge t=0.5 W=8", "--b", "exact SD W=8", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.splitlines()[-1]) == mat_ratio(judge, exact, 300, 1)
    assert "95% CI" in result.stdout
    listed = _autojudge(*args, "--list", cwd=tmp_path)
    assert listed.returncode == 0 and listed.stdout.splitlines() == ["exact SD W=8", "judge t=0.5 W=8"]
    wrong = _autojudge(
        *args, "--a", "topk", "--b", "exact SD W=8", "--statistic", "accuracy-drop", cwd=tmp_path
    )
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr
    assert "no setting 'topk' on split 'test'; known: exact SD W=8, judge t=0.5 W=8" in wrong.stderr
