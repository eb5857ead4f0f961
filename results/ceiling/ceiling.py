"""The ceiling of judge decoding (issue 63, items 1 and 5) from mined per-problem records.

Greedy speculative decoding is replayed over each problem's mined response (``autojudge.evaluation.ceiling``,
whose docstring states what the replay assumes): exact SD rejects every mismatch, the perfect judge only the
important ones (Algorithm 1's labels), so its MAT is the one a judge reaches at zero accuracy loss. Reported
per set of records: the important share of mismatches, exact SD's MAT, the ceiling's and their ratio at
W = 2, 4, 8, 16, 32, each with a 95% paired-bootstrap interval over problems (seeded).

Records are mining shard directories (``<dir>/problems/*.json``, as stage mine and ``autojudge ceiling --out``
write them). By default: every proposer of ``results/proposers/importance-unseen`` (the fine-tuned SmolLM2
target, 40 training problems none of the proposers saw) and the toy tasks' records in this folder
(``toy-arith``, ``toy-pyfunc``) where present. Run from the repository root::

    python results/ceiling/ceiling.py

writes ``ceiling.json`` and ``ceiling.md`` here.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from autojudge.evaluation.ceiling import WINDOWS, ceiling_summary
from autojudge.io import write_json, write_text
from autojudge.mining.shards import load_shard

HERE = Path("results/ceiling")
UNSEEN = Path("results/proposers/importance-unseen")
DEFAULT = {
    "SmolLM2-arith, EAGLE head": UNSEEN / "eagle-head",
    "SmolLM2-arith, distilled draft": UNSEEN / "distilled-draft",
    "SmolLM2-arith, LoRA draft, 4 layers": UNSEEN / "draft-4",
    "SmolLM2-arith, LoRA draft, 8 layers": UNSEEN / "draft-8",
    "SmolLM2-arith, LoRA draft, 12 layers": UNSEEN / "draft-12",
    "toy pair, arith": HERE / "toy-arith",
    "toy pair, pyfunc": HERE / "toy-pyfunc",
}


def _interval(figures: dict, digits: int = 2, scale: float = 1.0, unit: str = "") -> str:
    value, low, high = (scale * figures[k] for k in ("value", "low", "high"))
    return f"{value:.{digits}f}{unit} [{low:.{digits}f}, {high:.{digits}f}]"


def markdown(summaries: dict[str, dict]) -> str:
    """The ratio table (with the important share), then exact SD's and the ceiling's MAT."""
    windows = [f"W={w}" for w in next(iter(summaries.values()))["windows"]]

    def table(first: str, rows: list[list[str]]) -> list[str]:
        header = ["records", "problems", "mismatches", first, *windows]
        lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
        return lines + ["| " + " | ".join(row) + " |" for row in rows]

    ratios, mats = [], []
    for name, summary in summaries.items():
        start = [name, str(summary["problems"]), str(summary["mismatches"])]
        fraction = summary["important_fraction"]
        by_window = summary["windows"].values()
        ratios.append(
            [*start, _interval(fraction, 1, 100, "%") if fraction else "n/a"]
            + [_interval(w["ratio"], unit="x") for w in by_window]
        )
        mats.append(
            [*start, str(summary["important"])]
            + [f"{w['exact_mat']['value']:.2f} -> {w['ceiling_mat']['value']:.2f}" for w in by_window]
        )
    return "\n".join(
        [
            "# The ceiling of judge decoding: a perfect judge's MAT over exact SD's",
            "",
            "Greedy SD replayed over Algorithm 1's mined responses; the perfect judge rejects only important "
            "mismatches (zero accuracy loss by Algorithm 1's labels). 95% paired-bootstrap intervals over "
            "problems. Made by `python results/ceiling/ceiling.py` (README.md here).",
            "",
            *table("important", ratios),
            "",
            "MAT (tokens per target forward), exact SD -> ceiling:",
            "",
            *table("important", mats),
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--records",
        nargs="*",
        metavar="NAME=DIR",
        help="mining shard directories by name (default: the real proposers' unseen records and toy-*/ here)",
    )
    parser.add_argument("--samples", type=int, default=2000, help="bootstrap samples")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument("--out", type=Path, default=HERE, help="folder of ceiling.json and ceiling.md")
    args = parser.parse_args()
    if args.records:
        records = {name: Path(path) for name, _, path in (item.partition("=") for item in args.records)}
    else:
        records = {name: path for name, path in DEFAULT.items() if (path / "problems").is_dir()}
    summaries = {}
    for name, directory in records.items():
        summaries[name] = {
            "records": str(directory),
            **ceiling_summary(load_shard(directory), WINDOWS, args.samples, args.seed),
        }
        ratios = {w: figures["ratio"]["value"] for w, figures in summaries[name]["windows"].items()}
        print(f"{name}: important {summaries[name]['important_fraction']}, ceiling/exact {ratios}")
    write_json(
        args.out / "ceiling.json",
        {
            "command": " ".join(["python results/ceiling/ceiling.py", *sys.argv[1:]]),
            "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            "records": summaries,
        },
    )
    write_text(args.out / "ceiling.md", markdown(summaries))


if __name__ == "__main__":
    main()
