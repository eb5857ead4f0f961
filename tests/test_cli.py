"""The command line, run as users run it (a subprocess), on the committed toy pair."""

import subprocess
import sys


def _autojudge(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "autojudge", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def test_eval_prints_accuracy_and_mat(repo, tmp_path, arith_dir):
    params = tmp_path / "params.yaml"
    params.write_text(
        (repo / "params.yaml")
        .read_text()
        .replace("data_dir: data/arith", f"data_dir: {arith_dir}")
        .replace("models/toy_mixed/", f"{repo}/models/toy_mixed/")
    )
    result = _autojudge(
        "eval",
        "--task",
        "arith",
        "--split",
        "test",
        "--rule",
        "topk",
        "--k",
        "2",
        "--window",
        "4",
        "--limit",
        "3",
        "--output",
        str(tmp_path / "out.json"),
        "--params",
        str(params),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "sd topk(k=2) W=4: accuracy" in result.stdout and "MAT" in result.stdout
    assert (tmp_path / "out.json").is_file()
    assert "problem" in result.stderr  # the progress bar


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
