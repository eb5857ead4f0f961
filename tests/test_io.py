"""Atomic writes: a writer that dies mid-write leaves the old file (or none), never a torn one, and no
temporary behind; a finished one replaces the file or directory whole."""

from __future__ import annotations

import pytest

from autojudge.evaluation.report import write_csv
from autojudge.io import atomic_path, write_text


class WriterDiedError(Exception):
    """The writer's death, raised halfway through its write."""


def test_a_writer_killed_mid_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "curve.csv"
    write_text(path, "old, complete\n")
    with pytest.raises(WriterDiedError), atomic_path(path) as temporary:
        temporary.write_text("new, half")
        raise WriterDiedError
    assert path.read_text() == "old, complete\n"
    assert [p.name for p in tmp_path.iterdir()] == ["curve.csv"]


def test_a_writer_killed_before_the_first_file_leaves_none(tmp_path):
    path = tmp_path / "plots" / "curve.png"
    with pytest.raises(WriterDiedError), atomic_path(path) as temporary:
        temporary.write_bytes(b"\x89PNG half")
        raise WriterDiedError
    assert list(path.parent.iterdir()) == []


def test_a_real_writer_failing_midway_keeps_the_old_csv(tmp_path):
    """csv.DictWriter raises on the second row, after the header and first row went out."""
    path = tmp_path / "curve.csv"
    write_csv(path, [{"setting": "old", "mat": 1.0}])
    before = path.read_text()
    with pytest.raises(ValueError, match="not in fieldnames"):
        write_csv(path, [{"setting": "new", "mat": 2.0}, {"setting": "new", "surprise": 3}])
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["curve.csv"]


def test_a_finished_write_replaces_the_file_and_keeps_its_suffix_for_the_writer(tmp_path):
    path = tmp_path / "curve.png"
    write_text(path, "old")
    with atomic_path(path) as temporary:
        assert temporary.parent == tmp_path and temporary.suffix == ".png" and not temporary.exists()
        temporary.write_text("new")
    assert path.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["curve.png"]


def test_a_directory_is_replaced_whole_or_not_at_all(tmp_path):
    out = tmp_path / "target"
    out.mkdir()
    (out / "model.safetensors").write_text("old")
    (out / "stale.json").write_text("old")
    with pytest.raises(WriterDiedError), atomic_path(out) as temporary:
        temporary.mkdir()
        (temporary / "model.safetensors").write_text("half")
        raise WriterDiedError
    assert sorted(p.name for p in out.iterdir()) == ["model.safetensors", "stale.json"]
    with atomic_path(out) as temporary:
        temporary.mkdir()
        (temporary / "model.safetensors").write_text("new")
    assert [(p.name, p.read_text()) for p in out.iterdir()] == [("model.safetensors", "new")]
    assert [p.name for p in tmp_path.iterdir()] == ["target"]
