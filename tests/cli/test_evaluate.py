"""``autojudge eval`` and ``autojudge interval``, run as users run them, on the committed toy pair."""

import json

import pytest
import torch
import yaml

from autojudge.features.spec import FeatureSpec
from autojudge.heads.artifact import JudgeHead
from autojudge.models.tokenizer import load_tokenizer, tokenizer_hash


def _accept_everything_head(repo, path, tokenizer_of="models/toy_mixed/target"):
    """A head for the pair whose p(important) is about 0: the judge accepts every mismatch."""
    spec = FeatureSpec("target", 192, 128)
    fingerprint = tokenizer_hash(load_tokenizer(repo / tokenizer_of, "target"))
    return JudgeHead(torch.zeros(spec.dimension), -30.0, 0.5, spec, "toy-mixed", "arith", fingerprint).save(
        path
    )


def test_eval_prints_accuracy_and_mat(autojudge, eval_params, tmp_path):
    result = autojudge(
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
        str(eval_params),
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
    autojudge, eval_params, repo, tmp_path, rule, extra, described
):
    if rule == "judge":
        extra = ["--head", str(_accept_everything_head(repo, tmp_path / "head"))]
    out = tmp_path / "out.json"
    result = autojudge(
        "eval", "--rule", rule, *extra, "--window", "8", "--limit", "4", "--samples", "200",
        "--output", str(out), "--params", str(eval_params), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert described in result.stdout and "(95% bootstrap intervals over problems)" in result.stdout
    summary = json.loads(out.read_text())
    for name in ("accuracy", "mat"):
        figure = summary["intervals"][name]
        assert figure["low"] <= figure["value"] <= figure["high"]
    assert summary["intervals"]["mat"]["value"] == pytest.approx(summary["mat"])


def test_eval_refuses_a_head_of_another_pair_and_a_rule_without_its_threshold(
    autojudge, eval_params, repo, tmp_path
):
    other = _accept_everything_head(repo, tmp_path / "head", tokenizer_of="models/toy/target")
    result = autojudge(
        "eval", "--rule", "judge", "--head", str(other), "--params", str(eval_params), cwd=tmp_path
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"--head {other}" in result.stderr and "another tokenizer" in result.stderr
    result = autojudge("eval", "--rule", "fsd-js", "--params", str(eval_params), cwd=tmp_path)
    assert result.returncode == 2 and "--rule fsd-js needs --threshold" in result.stderr
    result = autojudge("eval", "--rule", "fsd", "--params", str(eval_params), cwd=tmp_path)
    assert result.returncode == 2 and "unknown rule 'fsd'; known: target, draft, exact" in result.stderr


def test_interval_recomputes_a_stored_interval_and_names_the_known_settings(autojudge, tmp_path):
    from autojudge.evaluation.comparison import mat_ratio
    from autojudge.evaluation.figures import ProblemFigures, figure_columns

    exact = [ProblemFigures(str(i), True, 60, 20 + i % 5) for i in range(20)]
    judge = [ProblemFigures(str(i), i % 7 != 0, 60, 8 + i % 4) for i in range(20)]
    problems = {"test": {"exact SD W=8": figure_columns(exact), "judge t=0.5 W=8": figure_columns(judge)}}
    path = tmp_path / "compare.json"
    path.write_text(json.dumps({"protocol": {"bootstrap_samples": 300, "seed": 1}, "problems": problems}))
    args = ("interval", "--file", str(path), "--split", "test")
    result = autojudge(*args, "--a", "judge t=0.5 W=8", "--b", "exact SD W=8", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.splitlines()[-1]) == mat_ratio(judge, exact, 300, 1)
    assert "95% CI" in result.stdout
    listed = autojudge(*args, "--list", cwd=tmp_path)
    assert listed.returncode == 0 and listed.stdout.splitlines() == ["exact SD W=8", "judge t=0.5 W=8"]
    wrong = autojudge(
        *args, "--a", "topk", "--b", "exact SD W=8", "--statistic", "accuracy-drop", cwd=tmp_path
    )
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr
    assert "no setting 'topk' on split 'test'; known: exact SD W=8, judge t=0.5 W=8" in wrong.stderr


def test_eval_without_its_head_file_names_it_in_one_line_before_loading_models(
    autojudge, eval_params, tmp_path
):
    missing = tmp_path / "heads" / "head.safetensors"
    result = autojudge(
        "eval", "--rule", "judge", "--head", str(missing), "--params", str(eval_params), cwd=tmp_path
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == f"error: judge head not found: {missing}"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["params.yaml"]  # nothing written


def test_eval_takes_the_task_from_params_unless_given(autojudge, tmp_path):
    """``task.name`` (and its ``data_dir``) when ``--task`` is not given."""
    params = tmp_path / "pyfunc.yaml"
    params.write_text("task: {name: pyfunc, data_dir: nowhere}\n")
    result = autojudge("eval", "--params", str(params), cwd=tmp_path)
    assert (
        result.returncode == 2 and result.stderr.strip() == "error: data file not found: nowhere/test.jsonl"
    )
    result = autojudge("eval", "--task", "arith", "--params", str(params), cwd=tmp_path)
    assert result.returncode == 2 and "data file not found: data/arith/test.jsonl" in result.stderr


def test_eval_takes_the_window_from_params_unless_given(autojudge, eval_params, tmp_path):
    """``evaluate.window`` when ``--window`` is not given (the tests above give it)."""
    raw = yaml.safe_load(eval_params.read_text())
    raw["decoding"]["max_new_tokens"] = 16  # one short response: the window is all this test reads
    params = tmp_path / "short.yaml"
    params.write_text(yaml.safe_dump(raw))
    result = autojudge("eval", "--limit", "1", "--samples", "20", "--params", str(params), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"sd exact W={raw['evaluate']['window']}: accuracy" in result.stdout
