"""``python -m docs.generate`` writes every generated block and the pairs' figure; ``--check`` writes nothing
and exits 1 naming what differs from the committed files."""

from __future__ import annotations

import argparse
import sys

from .run import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docs.generate", description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a block or figure is stale"
    )
    args = parser.parse_args(argv)
    problems = run(write=not args.check)
    for line in problems:
        print(line, file=sys.stderr)
    if problems and args.check:
        print("run `python -m docs.generate` (or `make docs`) to rewrite the blocks", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
