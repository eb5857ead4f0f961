"""``autojudge params check``: the whole check of a parameters file, alone."""

import shutil

from helpers import set_params


def test_params_check_passes_the_committed_file_and_names_a_bad_key(autojudge, repo, tmp_path):
    good = autojudge("params", "check", cwd=repo)
    assert (good.returncode, good.stdout) == (0, "params.yaml: ok\n"), good.stderr

    bad = tmp_path / "params.yaml"
    shutil.copy(repo / "params.yaml", bad)
    set_params(bad, {"evaluate.split": "tset"})
    result = autojudge("params", "check", "--file", str(bad), cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(
        f"error: {bad}: invalid parameters: evaluate.split: 'tset' is not a split of task 'arith'; "
        "its splits (toy.splits): train, validation, test"
    )
    assert result.stderr.count("\n") == 1  # one line


def test_params_check_names_the_active_preset(autojudge, repo, tmp_path):
    shutil.copy(repo / "params.yaml", tmp_path / "params.yaml")
    shutil.copytree(repo / "presets", tmp_path / "presets")
    assert autojudge("preset", "smollm2-cpu", cwd=tmp_path).returncode == 0
    checked = autojudge("params", "check", cwd=tmp_path)
    assert checked.stdout == "params.yaml: ok (preset smollm2-cpu over your own .preset/params.yaml)\n"
