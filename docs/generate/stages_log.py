"""How long a committed real run's stages took (``run-minutes``), from the ``stages.log`` its README's
command wrote: each ``dvc repro`` invocation's start and end, and each stage's start."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from .blocks import writer
from .sources import SourceError, load

STAGE = re.compile(r"^\s+(\d\d:\d\d:\d\d) Running stage '([^']+)'")
START = re.compile(r"^resume/start repro (.+)$")
RERUN = re.compile(r"^# code and params of (\w+): stages whose inputs changed, rerun (.+)$")
END = re.compile(r"^end\s+(.+?)\s+\(dvc repro exit status (\d+)\)")
DATE = "%a %b %d %H:%M:%S UTC %Y"


@dataclass
class Invocation:
    """One ``dvc repro`` of a run's log: when it started and ended, and its stages' starts."""

    label: str
    start: datetime
    end: datetime | None = None
    stages: list[tuple[str, datetime]] = field(default_factory=list)

    def minutes(self) -> list[tuple[str, float]]:
        """Each stage's minutes: from its start to the next stage's, the last one to the invocation's end."""
        ends = [start for _, start in self.stages[1:]] + [self.end]
        return [
            (name, (end - start).total_seconds() / 60)
            for (name, start), end in zip(self.stages, ends, strict=True)
        ]

    def total(self) -> float:
        return (self.end - self.start).total_seconds() / 60


def invocations(log: str) -> list[Invocation]:
    """The log's invocations, each stage line given to the invocation whose time span holds it."""
    found: list[Invocation] = []
    times: list[str] = []
    for line in log.splitlines():
        if match := START.match(line):
            found.append(Invocation("the run", datetime.strptime(match[1], DATE)))
        elif match := RERUN.match(line):
            found.append(Invocation(f"rerun on the code of {match[1]}", datetime.strptime(match[2], DATE)))
        elif (match := END.match(line)) and found:
            found[-1].end = datetime.strptime(match[1], DATE)
        elif match := STAGE.match(line):
            times.append(line)
    for line in times:
        clock, name = STAGE.match(line).groups()
        for run in found:
            day = datetime.combine(run.start.date(), datetime.strptime(clock, "%H:%M:%S").time())
            for start in (day, day + timedelta(days=1)):
                if run.start <= start <= run.end:
                    run.stages.append((name, start))
                    break
            else:
                continue
            break
        else:
            raise SourceError(f"stage {name} at {clock} falls in no invocation of the log")
    return found


@writer("run-minutes")
def run_minutes(page: Path, root: str) -> str:
    """Minutes by stage of the run's uninterrupted ``dvc repro``, its reruns, and the inferred total for the
    code of the last rerun (the run minus the stages the reruns replaced, plus the last rerun)."""
    runs = invocations(load(Path(root) / "stages.log"))
    first, reruns = runs[0], runs[1:]
    lines = ["| stage | minutes |", "|---|---:|"]
    lines += [f"| {name} | {minutes:.1f} |" for name, minutes in first.minutes()]
    lines.append(
        f"| **in all** ({first.start:%Y-%m-%d %H:%M} to {first.end:%H:%M} UTC) | **{first.total():.1f}** |"
    )
    for rerun in reruns:
        stages = ", ".join(f"{name} {minutes:.1f}" for name, minutes in rerun.minutes())
        lines.append(f"\n{rerun.label.capitalize()} ({rerun.start:%Y-%m-%d}): {stages} minutes.")
    if reruns:
        last = reruns[-1]
        replaced = {name for name, _ in last.minutes()}
        kept = sum(minutes for name, minutes in first.minutes() if name not in replaced)
        lines.append(
            f"A fresh clone of the code of the last rerun would take about **{kept + last.total():.1f} minutes** "
            f"on that host (inferred: the run's other stages plus the rerun's {last.total():.1f}; not one timed run)."
        )
    return "\n".join(lines)
