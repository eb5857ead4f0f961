"""Lossy-accept counters: what a rule accepted that the standard test rejects, per request and per rule.

A *lossy accept* is an emitted draft token (inside its request's accepted prefix) that vLLM's own
verification would have rejected: for a greedy request, a token that is not the target's argmax; for a
sampled request, one whose uniform failed the standard test u <= p(x) / q(x). A *verified draft token*
is one the drafter really proposed (not a placeholder) and verification checked, under any rule
(``exact`` included), so ``lossy / verified`` is the rule's lossy rate.

The worker counts (``LossyCounts``); the OpenAI server's ``/metrics`` shows the totals as two Prometheus
counters labelled by rule name::

    autojudge_lossy_accepted_tokens_total{rule="topk"} 12.0
    autojudge_verified_draft_tokens_total{rule="topk"} 96.0

The worker may run in another process than the API server (engine core processes, worker processes),
so the counts cross processes as prometheus_client's multiprocess files (memory-mapped, one per worker
process, no lock, no syscall per update): the worker writes ``counter_autojudge-<pid>.db`` into a
directory, and the API server's registry sums the files at each scrape. The directory is

* vLLM's own ``PROMETHEUS_MULTIPROC_DIR`` where vLLM set one (``--api-server-count`` > 1): vLLM's
  multiprocess registry then reads the plugin's files with its own;
* otherwise ``AUTOJUDGE_METRICS_DIR``: set by ``expose_counters`` in the process that builds the engine
  (the API server) before it starts the engine's processes, which inherit it, with a collector over it
  registered in prometheus_client's default registry (the one vLLM's single API server serves).

Nothing here depends on the platform. A step's counts are read on the host without stalling the
device: at once on the CPU, otherwise by a later step once their copy has arrived (vLLM runs one more
step after a request finishes, to free its state, so the totals settle right after the last response).
Per-request counts stay in the worker: they are logged at DEBUG (logger ``vllm.autojudge``) when a
request finishes. A process that decodes without a server and needs each request's count (the comparison's
sweeps) calls ``log_requests`` before it starts its engines: their workers then also append each step's
per-request counts to ``requests-<pid>.tsv`` in ``AUTOJUDGE_REQUEST_LOG``, read back by ``RequestCounts``
(written before the step's tokens leave the worker, so a finished request's counts are complete).
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

logger = logging.getLogger("vllm.autojudge")

METRICS_DIR_ENV = "AUTOJUDGE_METRICS_DIR"
REQUEST_LOG_ENV = "AUTOJUDGE_REQUEST_LOG"
VLLM_MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
LOSSY = "autojudge_lossy_accepted_tokens"
VERIFIED = "autojudge_verified_draft_tokens"
HELP = {
    LOSSY: "Draft tokens the autojudge rule accepted that vLLM's standard verification rejects.",
    VERIFIED: "Draft tokens verified by the autojudge plugin, by the rule that verified them.",
}
FILE_PREFIX = "counter_autojudge-"  # prometheus_client reads the metric type before the first "_"

_exposed: dict[str, object] = {}  # directory -> its collector (or None: vLLM's registry reads it)
_owned: list[tempfile.TemporaryDirectory[str]] = []  # removed when the process exits


def request_log_dir(environ: MutableMapping[str, str] | None = None) -> Path | None:
    """The directory of the per-request log (``log_requests``), or None."""
    found = (os.environ if environ is None else environ).get(REQUEST_LOG_ENV)
    return Path(found) if found else None


def counters_dir(environ: MutableMapping[str, str] | None = None) -> Path | None:
    """The directory the worker writes its counters into, or None (no one reads them)."""
    environ = os.environ if environ is None else environ
    found = environ.get(VLLM_MULTIPROC_ENV) or environ.get(METRICS_DIR_ENV)
    return Path(found) if found else None


def expose_counters(environ: MutableMapping[str, str] | None = None, registry: Any = None) -> Path:
    """Make this process's Prometheus registry (``registry``, default prometheus_client's) show the plugin's
    counters, once per directory; the directory.

    Called where an enabled engine is built, before its processes start: they inherit ``environ``."""
    environ = os.environ if environ is None else environ
    if environ.get(VLLM_MULTIPROC_ENV):
        path = environ[VLLM_MULTIPROC_ENV]
        _exposed.setdefault(path, None)  # vLLM's multiprocess registry reads it at each scrape
        return Path(path)
    if not environ.get(METRICS_DIR_ENV):
        owned = tempfile.TemporaryDirectory(prefix="autojudge-metrics-")
        _owned.append(owned)
        environ[METRICS_DIR_ENV] = owned.name
    path = environ[METRICS_DIR_ENV]
    Path(path).mkdir(parents=True, exist_ok=True)
    if path not in _exposed:
        from prometheus_client import REGISTRY
        from prometheus_client.multiprocess import MultiProcessCollector

        _exposed[path] = MultiProcessCollector(REGISTRY if registry is None else registry, path=path)
    return Path(path)


def log_requests(environ: MutableMapping[str, str] | None = None) -> Path:
    """Make the engines this process starts from now on log per-request counts; the log's directory."""
    environ = os.environ if environ is None else environ
    if not environ.get(REQUEST_LOG_ENV):
        owned = tempfile.TemporaryDirectory(prefix="autojudge-requests-")
        _owned.append(owned)
        environ[REQUEST_LOG_ENV] = owned.name
    return Path(environ[REQUEST_LOG_ENV])


class RequestCounts:
    """Per-request counts the workers appended to the request log since this reader was made, read
    incrementally: each ``read`` parses only the complete lines appended since the last one."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.offsets = {path: path.stat().st_size for path in directory.glob("requests-*.tsv")}
        self.counts: dict[str, list[int]] = {}

    def read(self) -> dict[str, list[int]]:
        """Request id as the caller gave it -> [lossy accepts, verified draft tokens] since the reader began
        (vLLM appends 8 random characters to each request id it is given)."""
        for path in sorted(self.directory.glob("requests-*.tsv")):
            with path.open("rb") as log:
                log.seek(self.offsets.get(path, 0))
                new = log.read()
            complete = new[: new.rfind(b"\n") + 1]  # a line being appended right now waits for the next read
            self.offsets[path] = self.offsets.get(path, 0) + len(complete)
            for line in complete.decode().splitlines():
                req_id, lossy, verified = line.split("\t")
                mine = self.counts.setdefault(req_id.rsplit("-", 1)[0], [0, 0])
                mine[0] += int(lossy)
                mine[1] += int(verified)
        return self.counts


class CounterFile:
    """This process's totals by rule, mirrored into its multiprocess file (shared by its engines)."""

    def __init__(self, directory: Path | None) -> None:
        self.totals: dict[str, list[float]] = {}  # rule -> [lossy, verified]
        self._file: Any = None
        if directory is not None:
            from prometheus_client.mmap_dict import MmapedDict

            self._file = MmapedDict(str(directory / f"{FILE_PREFIX}{os.getpid()}.db"))

    def add(self, rule: str, lossy: int, verified: int) -> None:
        total = self.totals.get(rule)
        if total is None:  # a file left by an earlier process with this pid: go on from its values
            total = [0.0, 0.0]
            if self._file is not None:
                total = [self._file.read_value(_key(metric, rule))[0] for metric in (LOSSY, VERIFIED)]
            self.totals[rule] = total
        total[0] += lossy
        total[1] += verified
        if self._file is not None:
            for metric, value in zip((LOSSY, VERIFIED), total, strict=True):
                self._file.write_value(_key(metric, rule), value, 0.0)


_files: dict[tuple[int, Path | None], CounterFile] = {}


def counter_file(directory: Path | None) -> CounterFile:
    """This process's ``CounterFile`` for ``directory`` (one per process: two writers would clash)."""
    key = (os.getpid(), directory)
    if key not in _files:
        _files[key] = CounterFile(directory)
    return _files[key]


StepRow = tuple[int, str, str, int]  # batch row, request id, rule name, real draft tokens verified


@dataclass
class PendingStep:
    """A step's counts still on their way from the device: ``lossy`` is read once ``done()``."""

    rows: list[StepRow]
    lossy: torch.Tensor  # [B] on the host, filled by a non-blocking copy
    done: Callable[[], bool]


class LossyCounts:
    """One runner's counts per live request, added to the process's totals by rule."""

    def __init__(self, directory: Path | None, request_log: Path | None = None) -> None:
        self.file = counter_file(directory)
        self.request_log = None if request_log is None else request_log / f"requests-{os.getpid()}.tsv"
        self.requests: dict[str, list[int]] = {}  # request id -> [lossy, verified], until it finishes
        self.pending: list[PendingStep] = []
        self.finished: list[str] = []  # finished requests to forget once nothing is pending

    @property
    def totals(self) -> dict[str, list[float]]:
        """Rule name -> [lossy accepts, verified draft tokens] of this process."""
        return self.file.totals

    def add_step(self, rows: list[StepRow], lossy: torch.Tensor | None) -> None:
        """Count one verification step (``lossy``: [B] per batch row, None: none lossy). A count on the
        CPU is read at once; on an accelerator it is copied without waiting and read by a later ``flush``
        (vLLM's async scheduling keeps running ahead of the device)."""
        if lossy is None or lossy.device.type == "cpu" or self.request_log is not None:
            self.add(_rows(rows, None if lossy is None else lossy.tolist()))  # a request log reads at once
            return
        event = torch.Event(device=lossy.device)
        host = lossy.to("cpu", non_blocking=True)
        event.record()
        self.pending.append(PendingStep(rows, host, event.query))

    def flush(self) -> None:
        """Count the pending steps whose copies have arrived, in order."""
        while self.pending and self.pending[0].done():
            step = self.pending.pop(0)
            self.add(_rows(step.rows, step.lossy.tolist()))

    def add(self, rows: Iterable[tuple[str, str, int, int]]) -> None:
        """Count ``(request id, rule name, lossy accepts, verified draft tokens)`` rows."""
        logged: list[str] = []
        for req_id, rule, lossy, verified in rows:
            if verified == 0 and lossy == 0:
                continue
            mine = self.requests.setdefault(req_id, [0, 0])
            mine[0] += lossy
            mine[1] += verified
            self.file.add(rule, lossy, verified)
            logged.append(f"{req_id}\t{lossy}\t{verified}\n")
        if self.request_log is not None and logged:
            with self.request_log.open("a") as log:
                log.writelines(logged)

    def finish(self, req_ids: Iterable[str]) -> None:
        """Count what has arrived, then forget finished requests (once no step of theirs is pending),
        logging their counts at DEBUG."""
        self.finished.extend(req_ids)
        self.flush()
        if self.pending:
            return
        finished, self.finished = self.finished, []
        for req_id in finished:
            counts = self.requests.pop(req_id, None)
            if counts is not None:
                logger.debug(
                    "autojudge: request %s: %d lossy accepts of %d verified draft tokens", req_id, *counts
                )


def _rows(rows: list[StepRow], lossy: list[int] | None) -> Iterator[tuple[str, str, int, int]]:
    for row, req_id, rule, drafts in rows:
        yield req_id, rule, lossy[row] if lossy is not None else 0, drafts


def _key(metric: str, rule: str) -> str:
    from prometheus_client.mmap_dict import mmap_key

    return mmap_key(metric, f"{metric}_total", ["rule"], [rule], HELP[metric])
