"""The lossy-accept counters: what counts as lossy, and the counts crossing processes to a registry."""

from __future__ import annotations

import subprocess
import sys

import torch
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from autojudge.rules.verification import lossy_per_request
from autojudge.vllm_plugin.counters import (
    METRICS_DIR_ENV,
    VLLM_MULTIPROC_ENV,
    CounterFile,
    LossyCounts,
    PendingStep,
    RequestCounts,
    counters_dir,
    expose_counters,
)


def test_only_emitted_drafts_the_native_test_rejects_are_lossy():
    # request 0: rows 0-2, request 1: no drafts, request 2: rows 3-4, request 3: rows 5-6
    cu = torch.tensor([3, 3, 5, 7], dtype=torch.int32)
    draft = torch.tensor([4, 5, 6, 7, 8, -1, 9])
    accepted = torch.tensor([True, True, True, False, True, True, True])
    native = torch.tensor([True, False, False, False, False, False, False])
    # 0: all three emitted, two rejected natively; 2: stops at row 3; 3: a placeholder stops it at once
    assert lossy_per_request(draft, cu, accepted, native).tolist() == [2, 0, 0, 0]
    accepted[3] = True
    assert lossy_per_request(draft, cu, accepted, native).tolist() == [2, 0, 2, 0]


def _scrape(directory) -> str:
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))
    return generate_latest(registry).decode()


def test_counts_by_request_and_rule_reach_a_registry_from_another_process(tmp_path):
    counts = LossyCounts(tmp_path)
    counts.add([("a", "topk", 2, 8), ("b", "exact", 0, 8), ("c", "topk", 0, 0)])
    counts.add([("a", "topk", 1, 4)])
    assert counts.requests == {"a": [3, 12], "b": [0, 8]}
    assert counts.totals["topk"] == [3.0, 12.0]
    counts.finish(["a", "unknown"])
    assert list(counts.requests) == ["b"]
    script = (
        "import sys; from pathlib import Path; from autojudge.vllm_plugin.counters import LossyCounts;"
        "LossyCounts(Path(sys.argv[1])).add([('x', 'topk', 5, 6)])"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True)
    text = _scrape(tmp_path)
    assert 'autojudge_lossy_accepted_tokens_total{rule="topk"} 8.0' in text
    assert 'autojudge_verified_draft_tokens_total{rule="topk"} 18.0' in text
    assert 'autojudge_lossy_accepted_tokens_total{rule="exact"} 0.0' in text


def test_counts_copied_from_a_device_are_read_once_they_arrived(tmp_path):
    counts = LossyCounts(None)
    arrived = [False]
    counts.add_step([(0, "a", "kl-mask", 4)], torch.tensor([0]))  # on the CPU: read at once
    counts.pending.append(PendingStep([(1, "a", "kl-mask", 4)], torch.tensor([0, 3]), lambda: arrived[0]))
    counts.finish(["a"])  # its last step is still on its way: kept
    assert counts.requests["a"] == [0, 4]
    arrived[0] = True
    counts.finish([])
    assert "a" not in counts.requests and not counts.pending
    assert counts.totals["kl-mask"] == [3.0, 8.0]


def test_a_file_left_by_a_process_with_the_same_pid_is_continued(tmp_path):
    CounterFile(tmp_path).add("fly", 1, 2)
    CounterFile(tmp_path).add("fly", 1, 2)
    assert 'autojudge_lossy_accepted_tokens_total{rule="fly"} 2.0' in _scrape(tmp_path)


def test_the_frontend_picks_the_directory_its_engine_processes_inherit(tmp_path):
    registry = CollectorRegistry()
    environ: dict[str, str] = {VLLM_MULTIPROC_ENV: str(tmp_path)}  # vLLM's multiprocess registry reads it
    assert expose_counters(environ, registry) == tmp_path
    assert METRICS_DIR_ENV not in environ
    assert counters_dir(environ) == tmp_path
    environ = {METRICS_DIR_ENV: str(tmp_path / "mine")}
    assert expose_counters(environ, registry) == tmp_path / "mine" == counters_dir(environ)
    LossyCounts(tmp_path / "mine").add([("a", "topk", 1, 1)])
    expose_counters(environ, registry)  # once per directory: counted once
    assert 'autojudge_lossy_accepted_tokens_total{rule="topk"} 1.0' in generate_latest(registry).decode()
    environ = {}
    made = expose_counters(environ, registry)
    assert environ[METRICS_DIR_ENV] == str(made) and made.is_dir()
    assert counters_dir({}) is None


def test_a_request_log_gives_each_request_its_counts_since_the_reader_began(tmp_path):
    """Counts logged per step reach the caller under the request id it gave (vLLM appends 8 characters);
    a reader made later sees only what came after it."""
    counts = LossyCounts(None, tmp_path)
    counts.add([("7-abcd1234", "topk", 2, 4), ("8-ffff0000", "exact", 0, 3)])
    first = RequestCounts(tmp_path)
    counts.add([("7-abcd1234", "topk", 1, 4), ("autojudge-3-0badf00d", "topk", 0, 0)])
    counts.add([("autojudge-3-0badf00d", "topk", 1, 2)])
    assert RequestCounts(tmp_path).read() == {}
    assert first.read() == {"7": [1, 4], "autojudge-3": [1, 2]}


def test_a_request_log_reader_reads_each_line_once_and_waits_for_a_line_being_written(tmp_path):
    counts = LossyCounts(None, tmp_path)
    reader = RequestCounts(tmp_path)
    counts.add([("5-00000000", "topk", 1, 3)])
    assert reader.read() == {"5": [1, 3]}
    counts.add([("5-00000000", "topk", 2, 3)])
    log = next(tmp_path.glob("requests-*.tsv"))
    with log.open("a") as partial:
        partial.write("6-00000000\t1")
    assert reader.read() == {"5": [3, 6]}
    with log.open("a") as rest:
        rest.write("\t2\n")
    assert reader.read() == {"5": [3, 6], "6": [1, 2]}
