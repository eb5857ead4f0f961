import pytest

from autojudge.errors import InputError
from autojudge.tasks.jsonl import read_jsonl, write_jsonl

REQUIRED = {"id": str, "answer": int}


def test_round_trip(tmp_path):
    rows = [{"id": "a", "answer": 1}, {"id": "b", "answer": 2}]
    write_jsonl(tmp_path / "split.jsonl", rows)
    assert read_jsonl(tmp_path / "split.jsonl", REQUIRED).to_list() == rows
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"id": "a", "answer": 1}\n{"id": "b", "answer": \n', r"split\.jsonl:2: not valid JSON"),
        ('{"id": "a", "answer": 1}\n{"id": "b"}\n', r"split\.jsonl:2: missing field 'answer'"),
        ('{"id": "a", "answer": "one"}\n', r"split\.jsonl:1: field 'answer' has type str"),
        ("[1, 2]\n", r"split\.jsonl:1: expected a JSON object"),
        ("\n", r"data file is empty: .*split\.jsonl"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path, content, message):
    (tmp_path / "split.jsonl").write_text(content)
    with pytest.raises(InputError, match=message):
        read_jsonl(tmp_path / "split.jsonl", REQUIRED)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(InputError, match=r"data file not found: .*nowhere\.jsonl"):
        read_jsonl(tmp_path / "nowhere.jsonl", REQUIRED)
