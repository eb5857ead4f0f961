"""The timing log (``results/timings.csv``: one row per timed run of a make target, the README's two
commands on fresh clones) as tables (``timing make-test <CPU>``, ``timing make-repro``) and a sentence naming
the latest runs (``timing-latest <target>...``)."""

from __future__ import annotations

from pathlib import Path

from .blocks import writer
from .sources import link, load

LOG = Path("results/timings.csv")
REPORTS = Path("results/suite-timing")


def _rows(job: str, cpu: str | None = None) -> list[dict[str, str]]:
    rows = [row for row in load(LOG) if row["job"] == job and (cpu is None or row["cpu"] == cpu)]
    return sorted(rows, key=lambda row: row["date"])  # stable: the log's order within a day


def _reports(page: Path, row: dict[str, str]) -> str:
    names = row["reports"].split()
    return ", ".join(
        f"[{name.removeprefix(row['commit'] + '-')}]({link(page, REPORTS / name)})" for name in names
    )


@writer("timing")
def timing(page: Path, job: str, cpu: str | None = None) -> str:
    """``make-test`` runs on one kind of CPU (minutes against that CPU's first row), or every ``make-repro``.
    Every run is on a fresh clone, nothing else on the cores."""
    if job == "make-test":
        rows = _rows("make test", cpu)
        baseline = float(rows[0]["minutes"])
        lines = [
            "| date | commit | what | tests | pytest, min | total with install, min | vs the first | report |",
            "|---|---|---|---|---:|---:|---:|---|",
        ]
        for row in rows:
            ratio = baseline / float(row["minutes"])
            lines.append(
                f"| {row['date']} | {row['commit']} | {row['what']} | {row['result']} | {row['pytest_minutes']} "
                f"| **{row['minutes']}** | {ratio:.2f}x | {_reports(page, row)} |"
            )
        return "\n".join(lines)
    lines = ["| date | commit | CPU | minutes | what |", "|---|---|---|---:|---|"]
    lines += [
        f"| {row['date']} | {row['commit']} | {row['cpu']} | **{row['minutes']}** | {row['what']} |"
        for row in _rows("make repro")
    ]
    return "\n".join(lines)


@writer("timing-latest")
def latest(page: Path, *jobs: str) -> str:
    """A sentence per job (``make-test``, ``make-repro``): the log's latest timed run of it that passed."""
    sentences = []
    for job in jobs:
        command = "make " + job.removeprefix("make-")
        row = [row for row in _rows(command) if "failed" not in row["result"]][-1]
        sentences.append(
            f"The latest timed `{command}` took **{row['minutes']} minutes** "
            f"({row['commit']}, {row['date']}, 2 cores, {row['cpu']})."
        )
    return " ".join(sentences) + f" Every run: [{LOG.name}]({link(page, LOG)})."
