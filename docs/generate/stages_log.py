"""How long a committed real run's stages took (``run-minutes``), from the ``stages.log`` its README's
command wrote: each ``dvc repro`` invocation's start and end (or the time it was killed, when a session
ended under it and the same command resumed it), and each stage's start."""

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
KILLED = re.compile(r"^killed\s+(.+?)\s+\((.*)\)")
RESUMES = "resumes from its checkpoints"  # in a killed line: the stage kept its work (else it restarts)
DATE = "%a %b %d %H:%M:%S UTC %Y"


@dataclass
class Invocation:
    """One ``dvc repro`` of a run's log: when it started and ended, and its stages' starts."""

    label: str
    start: datetime
    end: datetime | None = None
    stages: list[tuple[str, datetime]] = field(default_factory=list)
    killed: bool = False
    resumed: bool = False  # the killed stage resumed from its checkpoints instead of starting again

    def minutes(self) -> list[tuple[str, float]]:
        """Each stage's minutes: from its start to the next stage's, the last one to the invocation's end
        (marked interrupted when the invocation was killed)."""
        ends = [start for _, start in self.stages[1:]] + [self.end]
        rows = [
            (name, (end - start).total_seconds() / 60)
            for (name, start), end in zip(self.stages, ends, strict=True)
        ]
        if self.killed:
            name, minutes = rows[-1]
            then = "resumed from its checkpoints" if self.resumed else "started again"
            rows[-1] = (f"{name} (interrupted: the session ended; {then})", minutes)
        return rows

    def lost(self) -> float:
        """Minutes of an interrupted stage that started again (0 for one that resumed, or no interruption)."""
        return self.minutes()[-1][1] if self.killed and not self.resumed else 0.0

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
        elif (match := KILLED.match(line)) and found:
            found[-1].end, found[-1].killed = datetime.strptime(match[1], DATE), True
            found[-1].resumed = RESUMES in match[2]
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
    """Minutes by stage of the run's ``dvc repro`` (its invocations up to the first that ended, when sessions
    killed and resumed it), its reruns, and the inferred total for the code of the last rerun (the run minus
    the stages the reruns replaced, plus the last rerun)."""
    runs = invocations(load(Path(root) / "stages.log"))
    count = next((index for index, run in enumerate(runs) if not run.killed), len(runs) - 1) + 1
    parts, reruns = runs[:count], runs[count:]
    lines = ["| stage | minutes |", "|---|---:|"]
    lines += [f"| {name} | {minutes:.1f} |" for part in parts for name, minutes in part.minutes()]
    total, lost = sum(part.total() for part in parts), sum(part.lost() for part in parts)
    resumed = "".join(f", resumed {part.start:%H:%M}" for part in parts[1:])
    lines.append(
        f"| **in all** ({parts[0].start:%Y-%m-%d %H:%M} to {parts[-1].end:%H:%M} UTC{resumed}) | **{total:.1f}** |"
    )
    if lost:
        lines.append(
            f"\n{lost:.1f} of those minutes were an interrupted stage's, started again on resuming: "
            f"an uninterrupted run takes about **{total - lost:.1f} minutes** on that host."
        )
    if any(part.resumed for part in parts):
        lines.append("\nA stage that resumed from its checkpoints: its two rows add up to its minutes.")
    for rerun in reruns:
        stages = ", ".join(f"{name} {minutes:.1f}" for name, minutes in rerun.minutes())
        lines.append(f"\n{rerun.label.capitalize()} ({rerun.start:%Y-%m-%d}): {stages} minutes.")
    if reruns:
        last = reruns[-1]
        replaced = {name for name, _ in last.minutes()}
        kept = (
            sum(minutes for part in parts for name, minutes in part.minutes() if name not in replaced) - lost
        )
        lines.append(
            f"A fresh clone of the code of the last rerun would take about **{kept + last.total():.1f} minutes** "
            f"on that host (inferred: the run's other stages plus the rerun's {last.total():.1f}; not one timed run)."
        )
    return "\n".join(lines)
