"""Recomputing any interval of a comparison or cross-domain file from that file alone.

``metrics/<task>/compare.json`` and ``metrics/crossdomain.json`` keep, beside their tables, the
per-problem figures every interval came from (``problems``: split -> setting name -> parallel lists
``id``, ``correct``, ``tokens``, ``target_passes``) and the bootstrap's samples and seed
(compare: ``protocol.bootstrap_samples``/``protocol.seed``; crossdomain: top-level). With them, the same
paired bootstrap (:func:`autojudge.evaluation.comparison.accuracy_drop`, :func:`autojudge.evaluation.comparison.mat_ratio`)
gives back every stored interval exactly, and any other pair of settings of a split too:

    stored = load_stored("metrics/arith/compare.json")
    recompute(stored, "test", "target alone", "exact SD W=32", "accuracy-drop")
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autojudge.errors import InputError
from autojudge.evaluation.comparison import accuracy_drop, mat_ratio
from autojudge.evaluation.figures import FIGURE_COLUMNS, ProblemFigures, figures_from_columns
from autojudge.io import read_json

# statistic -> what it is, of settings a and b
STATISTICS = {
    "accuracy-drop": "accuracy of A minus accuracy of B (B's drop against A)",
    "mat-ratio": "MAT of A over MAT of B",
}


@dataclass(frozen=True)
class StoredFigures:
    """The per-problem figures of one file (split -> setting name -> columns) and its bootstrap."""

    path: Path
    problems: dict[str, dict[str, dict[str, list]]]
    samples: int
    seed: int

    def splits(self) -> list[str]:
        return list(self.problems)

    def settings(self, split: str) -> list[str]:
        """The setting names decoded on ``split``."""
        if split not in self.problems:
            raise InputError(f"{self.path}: no split {split!r}; known: {', '.join(self.problems)}")
        return list(self.problems[split])

    def figures(self, split: str, setting: str) -> list[ProblemFigures]:
        """One setting's per-problem figures on ``split``."""
        known = self.settings(split)
        if setting not in known:
            raise InputError(
                f"{self.path}: no setting {setting!r} on split {split!r}; known: {', '.join(known)}"
            )
        columns = self.problems[split][setting]
        if not isinstance(columns, dict) or any(c not in columns for c in FIGURE_COLUMNS):
            raise InputError(
                f"{self.path}: problems.{split}.{setting} needs the columns {', '.join(FIGURE_COLUMNS)}"
            )
        try:
            return figures_from_columns(columns)
        except (TypeError, ValueError) as error:
            raise InputError(f"{self.path}: problems.{split}.{setting}: {error}") from None


def load_stored(path: Path | str) -> StoredFigures:
    """The per-problem figures and bootstrap of a compare.json or crossdomain.json file."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("problems"), dict):
        raise InputError(
            f"{path}: no per-problem figures (key 'problems'); rerun its stage (compare or crossdomain) "
            "to write them"
        )
    bootstrap = data.get("protocol", data)  # compare.json: protocol; crossdomain.json: top level
    try:
        samples, seed = int(bootstrap["bootstrap_samples"]), int(bootstrap["seed"])
    except (KeyError, TypeError, ValueError):
        raise InputError(f"{path}: no bootstrap_samples and seed to recompute intervals with") from None
    return StoredFigures(path, data["problems"], samples, seed)


def recompute(stored: StoredFigures, split: str, a: str, b: str, statistic: str) -> dict[str, float]:
    """``statistic`` of settings ``a`` and ``b`` on ``split`` with its 95% paired-bootstrap interval
    (``value``, ``low``, ``high``), as the stage computed it.

    ``accuracy-drop``: accuracy of ``a`` minus that of ``b`` (a stored drop: a = "target alone");
    ``mat-ratio``: MAT of ``a`` over that of ``b`` (a stored gain: b = the exact SD setting)."""
    if statistic not in STATISTICS:
        raise InputError(f"unknown statistic {statistic!r}; known: {', '.join(STATISTICS)}")
    first, second = stored.figures(split, a), stored.figures(split, b)
    if [p.id for p in first] != [p.id for p in second]:
        raise InputError(f"{stored.path}: {a!r} and {b!r} were not decoded on the same problems of {split!r}")
    if not first:
        raise InputError(f"{stored.path}: no problems for {a!r} on split {split!r}")
    if statistic == "accuracy-drop":
        return accuracy_drop(first, second, stored.samples, stored.seed)
    return mat_ratio(first, second, stored.samples, stored.seed)
