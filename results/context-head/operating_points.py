"""Replayed speed of threshold judges over Algorithm 1's records (``context_head.py``'s second half).

A judge accepts a mismatch iff its score is below a threshold; greedy SD is replayed over the mined responses
with those acceptances (``evaluation.ceiling.replay``), and a problem is lost when any of its important
mismatches is accepted. An operating point is the largest threshold whose lost share is within a budget,
picked on the pooled out-of-fold scores, per outer fold on its training side, or the head's own. Each point
carries 95% paired bootstraps over problems (``evaluation.stats``) with its thresholds held fixed: lost share,
MAT, MAT over exact SD's and the share of the ceiling's gain ((MAT - exact) / (ceiling - exact)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from autojudge.evaluation.ceiling import (
    exact_sd,
    mismatch_acceptance,
    perfect_judge,
    replay,
    share_of_ceiling,
)
from autojudge.evaluation.stats import mean_of_first, paired_bootstrap, rate_of_first, rate_ratio
from autojudge.io import atomic_path
from autojudge.mining.search import MinedProblem

BUDGETS = (0.0, 0.01, 0.02)  # lost-problem shares: the 1-point accuracy budget's analogue and its neighbours
CURVE_AT = (0.01, 0.02, 0.05, 0.10, 0.20)  # lost shares the curve table reads
PLOT_LOST = 0.40  # the plot's widest lost share


@dataclass
class Method:
    """A judge's out-of-fold scores [M] (accepted below a threshold); per outer fold, the rows [folds, M] that
    may choose its threshold and their scores [folds, M] (a head: that fold's head's); a head's own threshold
    per fold (None: a rule)."""

    name: str
    scores: np.ndarray
    calibration: np.ndarray
    calibration_scores: np.ndarray
    shipped: np.ndarray | None


def largest_threshold(scores: np.ndarray, labels: np.ndarray, problem: np.ndarray, budget: float) -> float:
    """The largest t at which at most ``budget`` of these rows' problems (those with a mismatch) accept an
    important row (score < t)."""
    ids, inverse = np.unique(problem, return_inverse=True)
    lowest = np.full(len(ids), np.inf)  # each problem's lowest important score: lost once t exceeds it
    important = labels == 1
    np.minimum.at(lowest, inverse[important], scores[important])
    allowed = int(np.floor(budget * len(ids) + 1e-9))
    return float(np.sort(lowest)[allowed]) if allowed < len(ids) else np.inf


def _interval(point_low_high: tuple[float, float, float]) -> dict[str, float]:
    return dict(zip(("value", "low", "high"), (round(x, 4) for x in point_low_high), strict=True))


def _share(a: np.ndarray, b: np.ndarray) -> float:
    """Share of the ceiling's gain: ``a`` holds a judge's [tokens, passes] and the ceiling's, ``b`` exact SD's."""
    mat, ceiling, exact = (x[:, 0].sum() / x[:, 1].sum() for x in (a[:, :2], a[:, 2:], b))
    return share_of_ceiling(mat, exact, ceiling)


class Replayer:
    """Replays of one set of problems at several windows, against exact SD and the perfect judge."""

    def __init__(
        self,
        problems: Sequence[MinedProblem],
        windows: Sequence[int],
        samples: int,
        seed: int,
        correct: list[bool] | None = None,  # whether the target answered each problem correctly
    ) -> None:
        self.problems, self.windows, self.samples, self.seed = list(problems), list(windows), samples, seed
        self.correct = None if correct is None else np.array(correct, dtype=bool)
        self.exact = {w: replay(self.problems, w, exact_sd) for w in self.windows}
        self.ceiling = {w: replay(self.problems, w, perfect_judge) for w in self.windows}

    def baselines(self) -> dict:
        out = {}
        for w in self.windows:
            exact, ceiling = self.exact[w], self.ceiling[w]
            out[str(w)] = {
                "exact_mat": _interval(
                    paired_bootstrap(exact, exact, rate_of_first, self.samples, self.seed)
                ),
                "ceiling_mat": _interval(
                    paired_bootstrap(ceiling, ceiling, rate_of_first, self.samples, self.seed)
                ),
                "ceiling_ratio": _interval(
                    paired_bootstrap(ceiling, exact, rate_ratio, self.samples, self.seed)
                ),
            }
        return out

    def point(self, score: dict[tuple[str, int], float], threshold: dict[str, float]) -> tuple[dict, dict]:
        """One operating point (``threshold``: per problem id) and its per-problem passes and lost flags."""

        def accepts(problem: MinedProblem, mismatch) -> bool:
            return score[problem.id, mismatch.position] < threshold[problem.id]

        lost = np.array(
            [[any(m.important and accepts(p, m) for m in p.mismatches)] for p in self.problems], float
        )
        acceptance = mismatch_acceptance(self.problems, accepts)
        out = {
            "lost_problems": int(lost.sum()),
            "lost_share": _interval(paired_bootstrap(lost, lost, mean_of_first, self.samples, self.seed)),
            # lost problems the target had answered correctly: the accuracy a decode would lose (at most)
            "lost_correct": None if self.correct is None else int(lost[self.correct].sum()),
            "accepted": {k: round(v, 4) for k, v in acceptance.items()},
            "windows": {},
        }
        passes = {}
        for w in self.windows:
            rows, exact, ceiling = replay(self.problems, w, accepts), self.exact[w], self.ceiling[w]
            both = np.hstack([rows, ceiling])
            out["windows"][str(w)] = {
                "mat": _interval(paired_bootstrap(rows, rows, rate_of_first, self.samples, self.seed)),
                "ratio": _interval(paired_bootstrap(rows, exact, rate_ratio, self.samples, self.seed)),
                "share_of_ceiling": _interval(paired_bootstrap(both, exact, _share, self.samples, self.seed)),
            }
            passes[str(w)] = rows[:, 1].astype(int).tolist()
        return out, {"passes": passes, "lost": lost[:, 0].astype(int).tolist()}

    def curve(self, score: dict[tuple[str, int], float], lowest: np.ndarray) -> dict[str, list[list[float]]]:
        """[lost share, MAT over exact SD] at every threshold where a problem becomes lost, and accepting all."""
        out: dict[str, list[list[float]]] = {str(w): [] for w in self.windows}
        for t in [*np.unique(lowest[np.isfinite(lowest)]).tolist(), np.inf]:
            lost = float(np.mean(lowest < t))
            for w in self.windows:
                rows = replay(self.problems, w, lambda p, m, t=t: score[p.id, m.position] < t)
                out[str(w)].append([round(lost, 4), round(rate_ratio(rows, self.exact[w]), 4)])
        return out


def evaluate_methods(
    problems: Sequence[MinedProblem],
    keys: list[tuple[str, int]],
    methods: Sequence[Method],
    folds: dict[str, int],
    windows: Sequence[int],
    samples: int,
    seed: int,
    correct: list[bool] | None = None,
) -> dict:
    """Baselines, every method's operating points and curves, and the per-problem data of their intervals."""
    label_of = {(p.id, m.position): int(m.important) for p in problems for m in p.mismatches}
    labels = np.array([label_of[key] for key in keys])
    problem = np.array([key[0] for key in keys])
    ids = [p.id for p in problems]
    replayer = Replayer(problems, windows, samples, seed, correct)
    per_problem: dict = {
        "id": ids,
        "fold": [folds[i] for i in ids],
        "tokens": replayer.exact[windows[0]][:, 0].astype(int).tolist(),
        "passes": {
            "exact SD": {str(w): replayer.exact[w][:, 1].astype(int).tolist() for w in windows},
            "ceiling": {str(w): replayer.ceiling[w][:, 1].astype(int).tolist() for w in windows},
        },
        "lost": {},
    }
    points, curves = [], {}
    for method in methods:
        score = dict(zip(keys, method.scores.tolist(), strict=True))
        choices: list[tuple[str, float | None, list[float]]] = []
        for budget in BUDGETS:
            choices.append(("pooled", budget, [largest_threshold(method.scores, labels, problem, budget)]))
        for budget in BUDGETS:
            by_fold = [
                largest_threshold(scores[rows], labels[rows], problem[rows], budget)
                for rows, scores in zip(method.calibration, method.calibration_scores, strict=True)
            ]
            choices.append(("per fold", budget, by_fold))
        if method.shipped is not None:
            choices.append(("shipped", None, method.shipped.tolist()))
        for selection, budget, thresholds in choices:
            threshold = {i: thresholds[0 if selection == "pooled" else folds[i]] for i in ids}
            point, data = replayer.point(score, threshold)
            key = f"{method.name} | {selection} | {budget if budget is not None else 'target recall'}"
            per_problem["passes"][key], per_problem["lost"][key] = data["passes"], data["lost"]
            points.append(
                {
                    "method": method.name,
                    "selection": selection,
                    "budget": budget,
                    "thresholds": thresholds,
                    **point,
                }
            )
            print(
                f"{key}: lost {point['lost_problems']}, W={windows[0]} ratio {_ratio(point, windows[0])}",
                flush=True,
            )
        lowest = np.array(
            [
                min([score[p.id, m.position] for m in p.mismatches if m.important] or [np.inf])
                for p in problems
            ]
        )
        curves[method.name] = replayer.curve(score, lowest)
    return {"baselines": replayer.baselines(), "points": points, "curves": curves, "per_problem": per_problem}


def curve_at(points: list[list[float]], lost: float) -> float:
    """The curve's MAT over exact SD at the largest threshold whose lost share is <= ``lost``."""
    return max(ratio for share, ratio in points if share <= lost + 1e-9)


def lost_for(points: list[list[float]], ratio: float) -> float | None:
    """The least lost share at which the curve reaches ``ratio`` (None: never)."""
    return next((share for share, value in points if value >= ratio), None)


def _ratio(point: dict, window: int) -> str:
    ratio = point["windows"][str(window)]["ratio"]
    return f"{ratio['value']:.2f}x [{ratio['low']:.2f}, {ratio['high']:.2f}]"


def _pct(interval: dict[str, float]) -> str:
    return f"{100 * interval['value']:.1f}% [{100 * interval['low']:.1f}, {100 * interval['high']:.1f}]"


def _correct(data: dict) -> str:
    return "an unchecked share" if data["target_correct"] is None else str(data["target_correct"])


def _lost(point: dict) -> str:
    correct = "" if point["lost_correct"] is None else f" ({point['lost_correct']} correct)"
    return f"{point['lost_problems']}{correct}: {_pct(point['lost_share'])}"


def _threshold(point: dict) -> str:
    if point["selection"] == "shipped":
        return "its own (target recall, per fold)"
    where = "pooled scores" if point["selection"] == "pooled" else "per fold"
    return f"lost <= {100 * point['budget']:g}%, {where}"


def markdown(result: dict) -> str:
    """The ranking table, then one replayed-speed table per window, then the folds' choices."""
    data, minutes = result["data"], result["seconds"]["all"] / 60
    lines = [
        f"# Context head: {result['name']} ({data['problems']} problems, {data['mismatches']} mismatches, "
        f"{data['important']} important)",
        "",
        f"`{result['command']}` ({result['date']}, {result['processor']}, {minutes:.1f} minutes)",
        "",
        "Pooled scores: the heads' p(important) recalibrated per fold on their validation problems (Platt); "
        f"the target answered {_correct(data)} of the problems correctly.",
        "",
        "| judge | ROC-AUC [95% CI] | per fold: mean [min, max] | unimportant accepted at <= 0 / 1% / 5% "
        "important accepted | at <= 1%: 95% CI |",
        "|---|---|---|---|---|",
    ]
    for name, row in result["ranking"].items():
        ci, (low, high) = row["ci95"]["roc_auc"], row["ci95"]["accepted_at_0.01"]
        folds = row["roc_auc_per_fold"]
        accepted = " / ".join(f"{100 * row[f'accepted_at_{a:g}']:.0f}%" for a in (0, 0.01, 0.05))
        lines.append(
            f"| {name} | {row['roc_auc']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] | {np.mean(folds):.3f} [{min(folds):.3f}, "
            f"{max(folds):.3f}] | {accepted} | [{100 * low:.0f}%, {100 * high:.0f}%] |"
        )
    for w, base in result["baselines"].items():
        exact, ceiling = base["exact_mat"], base["ceiling_ratio"]
        lines += [
            "",
            f"Replayed speed at W = {w} (exact SD's MAT {exact['value']:.3f}; thresholds fixed in the bootstrap):",
            "",
            "| judge | threshold | lost problems [95% CI] | MAT over exact SD [95% CI] | share of ceiling [95% CI] "
            "| important / unimportant mismatches accepted |",
            "|---|---|---|---|---|---|",
            f"| ceiling (perfect judge) | - | 0 | {ceiling['value']:.3f}x [{ceiling['low']:.3f}, {ceiling['high']:.3f}] "
            "| 100% | 0% / 100% |",
        ]
        for point in result["points"]:
            ratio, share = point["windows"][w]["ratio"], point["windows"][w]["share_of_ceiling"]
            accepted = point["accepted"]
            lines.append(
                f"| {point['method']} | {_threshold(point)} | {_lost(point)} "
                f"| {ratio['value']:.3f}x [{ratio['low']:.3f}, {ratio['high']:.3f}] | {_pct(share)} "
                f"| {100 * accepted['important']:.1f}% / {100 * accepted['unimportant']:.1f}% |"
            )
    goal = result.get("goal")
    at = " / ".join(f"{100 * x:g}%" for x in CURVE_AT)
    lines += [
        "",
        f"Pooled curves (the figure): MAT over exact SD at the largest threshold losing <= {at} of the problems"
        + (f"; the least lost share reaching {goal['ratio']}x at W = {goal['window']}" if goal else "")
        + ":",
        "",
        "| judge | W | MAT over exact SD at lost <= "
        + at
        + (" | lost share for the goal |" if goal else " |"),
        "|---|---:|---|" + ("---|" if goal else ""),
    ]
    for name, by_window in result["curves"].items():
        for w, points in by_window.items():
            row = f"| {name} | {w} | " + " / ".join(f"{curve_at(points, x):.3f}x" for x in CURVE_AT) + " |"
            if goal and w == str(goal["window"]):
                needed = lost_for(points, goal["ratio"])
                row += " never |" if needed is None else f" {100 * needed:.1f}% |"
            elif goal:
                row += " - |"
            lines.append(row)
    lines += [
        "",
        "Per outer fold, what stage train's grid search chose (context head; paper head C):",
        "",
        "| fold | held-out problems | context head groups | weight | C | CV ROC-AUC by candidate (best over C) "
        "| validation ROC-AUC | paper head C | paper validation ROC-AUC |",
        "|---:|---:|---|---:|---:|---|---:|---:|---:|",
    ]
    for fold in result["folds"]:
        context, paper = fold["context head"], fold["paper head"]
        cv = ", ".join(f"{k}: {v:.3f}" for k, v in context["cv_auc_by_candidate"].items())
        lines.append(
            f"| {fold['fold']} | {fold['held_problems']} | {'+'.join(context['groups'])} | {context['important_weight']:g} "
            f"| {context['best_c']:g} | {cv} | {context['validation_auc']:.3f} | {paper['best_c']:g} "
            f"| {paper['validation_auc']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> None:
    """MAT over exact SD against lost share, per method (pooled thresholds), one panel per window."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    windows = list(result["baselines"])
    figure, axes = pyplot.subplots(1, len(windows), figsize=(4.2 * len(windows), 3.6), squeeze=False)
    for axis, w in zip(axes[0], windows, strict=True):
        for name, by_window in result["curves"].items():
            points = np.array(by_window[w])
            (line,) = axis.step(100 * points[:, 0], points[:, 1], where="post", label=name)
            honest = [p for p in result["points"] if p["method"] == name and p["selection"] != "pooled"]
            for point, marker in zip(honest, "ooos", strict=False):  # per fold at 0 / 1 / 2%, the head's own
                x, y = 100 * point["lost_share"]["value"], point["windows"][w]["ratio"]["value"]
                axis.plot(x, y, marker=marker, color=line.get_color(), fillstyle="none")
        ceiling = result["baselines"][w]["ceiling_ratio"]["value"]
        axis.axhline(ceiling, color="black", ls="--", label="ceiling")
        goal = result.get("goal")
        if goal and str(goal["window"]) == w:
            axis.axhline(goal["ratio"], color="black", ls=":", label=f"goal {goal['ratio']}x")
        shown = [r for c in result["curves"].values() for share, r in c[w] if share <= PLOT_LOST]
        axis.set_ylim(0.98, 1.02 * max(ceiling, *shown))
        axis.axhline(1.0, color="grey", lw=0.8)
        axis.axvline(1.0, color="grey", ls=":", lw=0.8)
        axis.set(
            xlabel="problems lost (%)",
            ylabel="MAT over exact SD",
            title=f"W = {w}",
            xlim=(0, 100 * PLOT_LOST),
        )
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=7, frameon=False)
    figure.suptitle(
        f"Replayed speed against problems lost, {result['name']}\nlines: thresholds on the pooled scores; "
        "circles: per fold (lost <= 0 / 1 / 2%); squares: the head's own",
        fontsize=9,
    )
    figure.tight_layout(rect=(0, 0.06, 1, 1))
    with atomic_path(path) as temporary:
        figure.savefig(temporary, format="png", dpi=110)
    pyplot.close(figure)
