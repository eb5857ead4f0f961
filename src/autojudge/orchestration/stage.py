"""What every DVC stage script shares: parse ``--params``, run, and turn user errors into one line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autojudge.errors import AutoJudgeError, InputError
from autojudge.io import write_json
from autojudge.params import Params, load_params


def stage_arguments(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--params", type=Path, default=Path("params.yaml"), help="parameters file")
    parser.add_argument("--task", help="the pipeline task (params: tasks) whose stage this is; default: task")
    return parser


def run_stage(
    name: str, body: Callable[[Params, argparse.Namespace], None], parser: argparse.ArgumentParser
) -> None:
    """Run ``body(params, args)``; a user error prints ``stage <name>: <message>`` and exits with 2."""
    args = parser.parse_args()
    try:
        body(load_params(args.params, args.task), args)
    except AutoJudgeError as error:
        print(f"stage {name}: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def run_entry_stage(
    name: str, section: str, build: Callable[[Params, Any, str], dict], description: str
) -> None:
    """A stage over one entry of a params mapping (a dvc.yaml ``foreach``): ``--name`` picks the entry of
    ``params.<section>``, ``build(params, entry, name)`` does the work, its summary goes to ``--metrics``."""
    parser = stage_arguments(description)
    parser.add_argument("--name", required=True, help=f"the entry of params {section}")
    parser.add_argument("--metrics", type=Path, required=True)

    def body(params: Params, args: argparse.Namespace) -> None:
        entries = getattr(params, section)
        if args.name not in entries:
            raise InputError(f"params {section} has no entry {args.name!r} (has {sorted(entries)})")
        summary = build(params, entries[args.name], args.name)
        write_json(args.metrics, summary)
        print(summary)

    run_stage(name, body, parser)
