"""What every DVC stage script shares: parse ``--params``, run, and turn user errors into one line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from autojudge.errors import AutoJudgeError
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
