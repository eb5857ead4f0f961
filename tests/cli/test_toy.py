"""``autojudge toy train`` over a pair already there (the committed one): refused without ``--force``."""

import pytest


@pytest.mark.parametrize(
    ("present", "extra", "named"),
    [
        (("target", "draft"), (), "models/toy_mixed/target and models/toy_mixed/draft already exist"),
        (("target", "draft"), ("--only", "draft"), "models/toy_mixed/draft already exists"),
        (("draft",), (), "models/toy_mixed/draft already exists"),
    ],
)
def test_toy_train_refuses_to_overwrite_a_model_without_force(
    autojudge, repo, tmp_path, present, extra, named
):
    """The default ``--out`` (models/toy_mixed) in a directory holding that pair's folders: one line telling
    to pass --force, status 2, and nothing trained or written."""
    out = tmp_path / "models" / "toy_mixed"
    for role in present:
        (out / role).mkdir(parents=True)
    result = autojudge("toy", "train", *extra, "--params", str(repo / "params.yaml"), cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        f"error: {named}: pass --force to overwrite (the pair in models/ is committed), or --out another directory"
    )
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "models",
        "models/toy_mixed",
        *sorted(f"models/toy_mixed/{role}" for role in present),
    ]
