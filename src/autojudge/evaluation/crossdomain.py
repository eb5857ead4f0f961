"""Domain shift: every pipeline task's head decoding every domain (a task's split), its own included.

A head learns which mismatches matter from one task's mined responses; on another domain it may call
important tokens unimportant (the AutoJudge paper's GSM8K head on code, and the reverse). Each domain is
decoded with target greedy, exact SD and every head at its own threshold, at one window, with the same
pair. Per head and domain: the accuracy drop against target greedy and the MAT gain over exact SD, each
with a 95% paired-bootstrap interval over problems. A domain where target greedy is below
``MIN_COMPETENCE`` is outside the target's competence: it cannot say whether a head transfers.
The head's own domain (its task's evaluation split) is a row too, marked "own"; heads of out-of-fold
tasks are decoded whole there (no fold held out), so that row is in-sample for them.

This module decodes nothing (the card reads its tables without the model stack);
:func:`autojudge.evaluation.crossdomain_decode.cross_domain` decodes every domain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from autojudge.errors import InputError
from autojudge.evaluation.comparison import MIN_COMPETENCE, accuracy_drop, mat_ratio
from autojudge.evaluation.setting import Setting

if TYPE_CHECKING:
    from autojudge.evaluation.figures import ProblemFigures


@dataclass(frozen=True)
class Domain:
    task: str
    split: str

    @classmethod
    def parse(cls, text: str) -> Domain:
        task, _, split = text.partition(":")
        if not task or not split:
            raise InputError(f"crossdomain.domains: {text!r} is not task:split")
        return cls(task, split)

    @property
    def name(self) -> str:
        return f"{self.task}:{self.split}"


def head_method(task: str) -> str:
    """The sweep's key of a task's head (its settings: method judge, ``head`` the task)."""
    return Setting("judge", head=task).head_key


def domain_row(
    domain: Domain,
    head_task: str,
    own: bool,
    target: list[ProblemFigures],
    exact: list[ProblemFigures],
    judged: list[ProblemFigures],
    samples: int,
    seed: int,
) -> dict:
    """One head on one domain against target greedy and exact SD on the same problems, with intervals;
    ``own``: the domain is the head task's evaluation split."""
    target_accuracy = sum(p.correct for p in target) / len(target)
    return {
        "domain": domain.name,
        "head": head_task,
        "own": own,
        "examples": len(target),
        "competent": target_accuracy >= MIN_COMPETENCE,
        "target_accuracy": target_accuracy,
        "exact_mat": sum(p.tokens for p in exact) / sum(p.target_passes for p in exact),
        "judge_accuracy": sum(p.correct for p in judged) / len(judged),
        "judge_mat": sum(p.tokens for p in judged) / sum(p.target_passes for p in judged),
        "accuracy_drop": accuracy_drop(target, judged, samples, seed),
        "mat_gain_vs_exact_sd": mat_ratio(judged, exact, samples, seed),
    }


def _figure(entry: dict, percent: bool) -> str:
    if percent:
        return f"{100 * entry['value']:.1f} [{100 * entry['low']:.1f}, {100 * entry['high']:.1f}]"
    return f"{entry['value']:.2f}x [{entry['low']:.2f}, {entry['high']:.2f}]"


def head_table(rows: list[dict]) -> str:
    """One head's rows as a markdown table (drops in points, gains as ratios, 95% intervals)."""
    lines = [
        "| domain | problems | target greedy | exact SD MAT | head accuracy | drop vs target (points) "
        "| MAT gain vs exact SD |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        domain = f"{row['domain']} (own)" if row["own"] else row["domain"]
        target = f"{100 * row['target_accuracy']:.1f}%"
        if not row["competent"]:
            target += " (outside competence)"
        lines.append(
            f"| {domain} | {row['examples']} | {target} | {row['exact_mat']:.2f} "
            f"| {100 * row['judge_accuracy']:.1f}% | {_figure(row['accuracy_drop'], True)} "
            f"| {_figure(row['mat_gain_vs_exact_sd'], False)} |"
        )
    return "\n".join(lines)


def markdown(result: dict) -> str:
    parts = [
        f"Every head at its own threshold, W={result['window']}, first {result['limit'] or 'all'} problems "
        "of each domain; 95% paired-bootstrap intervals over problems. A domain where target greedy is "
        f"below {100 * result['min_competence']:.0f}% is outside the target's competence."
    ]
    for task, rows in result["heads"].items():
        parts.append(
            f"### The {task} head (threshold {result['thresholds'][task]:.4g})\n\n{head_table(rows)}"
        )
    return "\n\n".join(parts)
