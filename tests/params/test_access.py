"""Recording which params keys a process reads (``autojudge.params.access``): values read, sections dumped,
copies, pipeline tasks' views, and the file a stage's process leaves."""

from __future__ import annotations

import atexit
import json

import pytest

from autojudge.params import Section, access, load_params
from autojudge.params.access import ACCESS_LOG, STAGE, WHOLE, Recorder


class Inner(Section):
    a: int = 1
    b: int = 2


class Outer(Section):
    inner: Inner = Inner()
    entries: dict[str, Inner] = {"x": Inner()}  # noqa: RUF012 - pydantic copies it per instance
    flag: bool = True


@pytest.fixture
def recorder(monkeypatch) -> Recorder:
    """A recorder for this test only (the process's own starts in a DVC stage's environment)."""
    started = Recorder()
    monkeypatch.setattr(access, "RECORDER", started)
    return started


def test_values_read_are_recorded_by_key_and_sections_passed_through_are_not(recorder):
    outer = Outer()
    recorder.watch(outer)
    assert outer.inner.a == 1 and outer.entries["x"].b == 2 and outer.flag
    outer.inner  # noqa: B018 - passed through: nothing read yet
    Outer().flag  # noqa: B018 - not watched
    assert recorder.reads == {"": {"inner.a", "entries.x.b", "flag"}}


def test_a_dumped_section_is_read_whole(recorder):
    outer = Outer()
    recorder.watch(outer)
    outer.inner.model_dump()
    outer.model_dump(mode="json")
    assert recorder.reads == {"": {"inner", WHOLE}}


def test_a_copy_is_watched_as_its_original_less_the_keys_it_replaces(recorder):
    outer = Outer()
    recorder.watch(outer)
    copy = outer.model_copy(update={"inner": outer.inner.model_copy(update={"a": 5}), "flag": False})
    assert copy.inner.a == 5 and copy.inner.b == 2 and not copy.flag
    assert recorder.reads == {"": {"inner.b"}}


def test_a_pipeline_tasks_view_records_under_the_task_and_not_its_task_section(recorder, repo):
    params = load_params(repo / "params.yaml", "pyfunc")
    assert params.task.name == "pyfunc" and params.compare.limit == 100  # tasks.pyfunc overrides it
    whole = load_params(repo / "params.yaml")
    assert whole.task.name == "arith"
    assert whole.for_task("arith").evaluate.split == "test"
    assert recorder.reads == {
        "pyfunc": {"compare.limit"},
        "": {"task.name", "tasks"},  # for_task reads the tasks' overrides
        "arith": {"evaluate.split"},
    }


def test_a_stage_process_writes_what_it_read_to_a_file_of_its_own(monkeypatch, tmp_path, repo):
    monkeypatch.setattr(access, "RECORDER", None)
    monkeypatch.delenv(STAGE, raising=False)
    monkeypatch.setenv(ACCESS_LOG, str(tmp_path))
    assert access.recorder() is None  # not a DVC stage
    monkeypatch.setenv(STAGE, "train@arith")
    started = access.recorder()
    atexit.unregister(started.write)  # written below, not when the tests end
    assert access.recorder() is started
    load_params(repo / "params.yaml", "arith").train.seed  # noqa: B018
    started.write(tmp_path, "train@arith")
    started.write(tmp_path, "train@arith")  # a second process of the stage: a file of its own
    records = [json.loads(path.read_text()) for path in tmp_path.glob("*.json")]
    assert records == [{"stage": "train@arith", "reads": {"arith": ["train.seed"]}}] * 2
