"""Options shared by the command groups."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ParamsOption = Annotated[Path, typer.Option("--params", help="Parameters file.")]
