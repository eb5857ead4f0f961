"""``autojudge promote`` on an empty registry: one clear line and a non-zero exit, not a traceback."""


def test_rollback_before_anything_is_registered_is_one_line(autojudge, repo, tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    result = autojudge("promote", "--rollback", "--params", str(repo / "params.yaml"), cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    error = result.stderr.splitlines()[-1]  # after MLflow's log lines about creating the store
    assert error.startswith("error: cannot roll back model autojudge-") and error.endswith("not found")
