"""The ceiling of judge decoding: greedy speculative decoding replayed over Algorithm 1's mined responses.

Algorithm 1 ends each problem with ``response_ids``: the target's greedy response with every unimportant
draft token swapped in, the target continuing greedily after each swap, and an answer equivalent to the
target's own. Along that response the proposer's teacher-forced prediction is known at every position: the
response token itself, except at a tested mismatch, where it is the mismatch's ``draft_token``. Greedy
speculative decoding (SD) at window W is replayed on it: each step the draft proposes up to W tokens, the rule
accepts until the first token it rejects, and the step emits the accepted tokens plus one target token (the
target's token at the rejection, or the bonus token after a fully accepted window) for one target forward.

- The perfect judge (:func:`perfect_judge`) accepts exactly the unimportant mismatches. Its output *is* the
  recorded response (the target continued greedily after each accepted swap, and the answer survived each),
  so its MAT is the one a judge reaches at zero accuracy loss. One approximation: a window accepted in full
  ends with the target's bonus token, which at an unimportant mismatch would be the target's token, not the
  recorded draft token; the replay counts the same tokens and continues along the recorded response.
- Exact SD (:func:`exact_sd`) is replayed on the same response, rejecting at every mismatch. Real exact SD
  follows the target's own greedy response (``initial_response_ids``), where the proposer's predictions are
  known only up to the first unimportant swap; the replay compares both rules' target forwards on one
  response of the same tokens.
- Any other rule (:func:`judged`: a head's or training-free rule's scores) is replayed teacher-forced: after
  it accepts an important mismatch the real response, and perhaps its answer, would change; the replay
  continues along the recorded response.
- An EAGLE head's predictions are its first draft after each prefix (fed the target's hidden states); deeper
  drafts of a real window read the head's own features, which both rules' replays treat alike.

A problem whose target response had no answer was not searched (no mismatch tested), so its proposals are
unknown: it cannot be replayed. Ratios and MATs carry 95% paired-bootstrap intervals over problems
(``evaluation.stats``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from autojudge.errors import InputError
from autojudge.evaluation.stats import paired_bootstrap, rate_of_first, rate_ratio
from autojudge.mining.search import MinedProblem, Mismatch

WINDOWS = (2, 4, 8, 16, 32)

# whether a rule accepts a mismatch of a problem
Accepts = Callable[[MinedProblem, Mismatch], bool]


def exact_sd(problem: MinedProblem, mismatch: Mismatch) -> bool:
    """Exact SD: no mismatch is accepted."""
    return False


def perfect_judge(problem: MinedProblem, mismatch: Mismatch) -> bool:
    """The judge Algorithm 1's labels describe: every unimportant mismatch is accepted."""
    return not mismatch.important


def judged(scores: Mapping[tuple[str, int], float], threshold: float) -> Accepts:
    """A threshold rule or head: accepts a mismatch iff its score, keyed by (problem id, position), is below
    ``threshold`` (the rules' convention, ``AcceptanceRule.score``)."""

    def accepts(problem: MinedProblem, mismatch: Mismatch) -> bool:
        return scores[problem.id, mismatch.position] < threshold

    return accepts


def check_windows(windows: Sequence[int], longest: int) -> None:
    """Windows must be distinct, from 1 to ``longest`` (the longest response: ``mining.max_response_tokens``)."""
    if not windows:
        raise InputError("no draft window given: need at least one")
    out_of_range = [w for w in windows if not 1 <= w <= longest]
    if out_of_range:
        raise InputError(f"draft windows {out_of_range} out of range: need 1 <= W <= {longest}")
    if len(set(windows)) < len(windows):
        raise InputError(f"draft windows {list(windows)} repeat a window")


def target_passes(length: int, rejected: Iterable[int], window: int) -> int:
    """Target forwards of greedy SD at ``window`` over a response of ``length`` tokens whose draft proposals
    are rejected at the positions ``rejected`` (and accepted everywhere else)."""
    if window < 1:
        raise ValueError(f"window {window}: need at least 1")
    rejections = sorted(set(rejected))
    passes = position = index = 0
    while position < length:
        while index < len(rejections) and rejections[index] < position:
            index += 1
        first = rejections[index] if index < len(rejections) else length
        passes += 1
        position += min(first - position, window) + 1  # accepted proposals, then the target's token
    return passes


def replay(problems: Sequence[MinedProblem], window: int, accepts: Accepts) -> np.ndarray:
    """[problems, 2]: tokens and target forwards of each problem's response replayed at ``window``."""
    rows = []
    for problem in problems:
        if problem.answer is None:
            raise InputError(f"problem {problem.id}: no answer, so Algorithm 1 searched none of its tokens")
        rejected = [m.position for m in problem.mismatches if not accepts(problem, m)]
        length = len(problem.response_ids)
        rows.append([length, target_passes(length, rejected, window)])
    return np.array(rows, dtype=float).reshape(-1, 2)


def mismatch_acceptance(problems: Sequence[MinedProblem], accepts: Accepts) -> dict[str, float]:
    """The share of the important and of the unimportant mismatches a rule accepts (teacher-forced)."""
    counts = {True: [0, 0], False: [0, 0]}  # important -> [accepted, all]
    for problem in problems:
        for mismatch in problem.mismatches:
            counts[mismatch.important][0] += accepts(problem, mismatch)
            counts[mismatch.important][1] += 1
    return {
        label: accepted / total if total else math.nan
        for label, (accepted, total) in (("important", counts[True]), ("unimportant", counts[False]))
    }


def share_of_ceiling(mat: float, exact_mat: float, ceiling_mat: float) -> float:
    """How much of the gain from exact SD to the ceiling a rule's MAT reaches (nan when there is none)."""
    gain = ceiling_mat - exact_mat
    return (mat - exact_mat) / gain if gain else math.nan


def _interval(point_low_high: tuple[float, float, float]) -> dict[str, float]:
    return dict(zip(("value", "low", "high"), (round(x, 4) for x in point_low_high), strict=True))


def ceiling_summary(
    problems: Sequence[MinedProblem], windows: Sequence[int] = WINDOWS, samples: int = 2000, seed: int = 0
) -> dict:
    """The important share of mismatches, and exact SD's MAT, the ceiling's and their ratio at each window,
    with 95% paired-bootstrap intervals over the problems that have an answer."""
    searched = [p for p in problems if p.answer is not None]
    if not searched:
        raise InputError(f"none of {len(problems)} mined problems has an answer: nothing to replay")
    importance = np.array([[sum(m.important for m in p.mismatches), len(p.mismatches)] for p in searched])
    summary = {
        "problems": len(searched),
        "problems_without_answer": len(problems) - len(searched),
        "tokens": sum(len(p.response_ids) for p in searched),
        "mismatches": int(importance[:, 1].sum()),
        "important": int(importance[:, 0].sum()),
        "important_fraction": None,
        "windows": {},
        "bootstrap": {"samples": samples, "seed": seed},
    }
    if summary["mismatches"]:
        with np.errstate(invalid="ignore"):  # a resample of problems without mismatches has no fraction
            fraction = paired_bootstrap(importance, importance, rate_of_first, samples, seed)
        summary["important_fraction"] = _interval(fraction)
    for window in windows:
        exact, ceiling = replay(searched, window, exact_sd), replay(searched, window, perfect_judge)
        summary["windows"][str(window)] = {
            "exact_mat": _interval(paired_bootstrap(exact, exact, rate_of_first, samples, seed)),
            "ceiling_mat": _interval(paired_bootstrap(ceiling, ceiling, rate_of_first, samples, seed)),
            "ratio": _interval(paired_bootstrap(ceiling, exact, rate_ratio, samples, seed)),
        }
    return summary
