"""What every DVC stage script shares: parse ``--params``, run, and turn user errors into one line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from autojudge.errors import AutoJudgeError, InputError
from autojudge.io import write_json
from autojudge.orchestration.dvc_stages import TRANSIENT_EXIT
from autojudge.orchestration.transient import is_transient
from autojudge.params import Params, load_params

USER_ERROR_EXIT = 2


def stage_arguments(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--params", type=Path, default=Path("params.yaml"), help="parameters file")
    parser.add_argument("--task", help="the pipeline task (params: tasks) whose stage this is; default: task")
    return parser


def run_stage(
    name: str, body: Callable[[Params, argparse.Namespace], None], parser: argparse.ArgumentParser
) -> None:
    """Run ``body(params, args)``. A user error prints ``stage <name>: <message>`` and exits with 2; a
    transient error (``is_transient``: network, server unavailable) prints the same line and exits with
    ``TRANSIENT_EXIT``, which the orchestrator retries; any other error (a bug) keeps its traceback."""
    args = parser.parse_args()
    try:
        body(load_params(args.params, args.task), args)
    except Exception as error:
        if is_transient(error):
            _fail(name, error, TRANSIENT_EXIT)
        if isinstance(error, AutoJudgeError):
            _fail(name, error, USER_ERROR_EXIT)
        raise


def _fail(name: str, error: Exception, status: int) -> NoReturn:
    message = str(error) if isinstance(error, AutoJudgeError) else f"{type(error).__name__}: {error}"
    print(f"stage {name}: {message}", file=sys.stderr)
    raise SystemExit(status) from None


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
