"""Pair presets: partial parameter files in ``presets/`` overlaid on ``params.yaml``.

A preset names a task and a draft/target pair with the settings that go with them (dtype, device,
vLLM memory, chat template). ``toy`` is the embedded default and changes nothing. A key set to
``null`` in a preset removes it (e.g. ``toy: null`` for tasks outside the toy world).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from autojudge.errors import InputError
from autojudge.io import write_text
from autojudge.params import Params, overlay, validate_params

DEFAULT_PRESET = "toy"
PRESETS_DIR = "presets"


def available_presets(root: Path) -> list[str]:
    return sorted([DEFAULT_PRESET, *(path.stem for path in (root / PRESETS_DIR).glob("*.yaml"))])


def _read_mapping(path: Path) -> dict:
    if not path.is_file():
        raise InputError(f"parameters file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise InputError(f"{path}: not valid YAML ({error})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping at the top level")
    return data


def preset_file(root: Path, preset: str) -> Path:
    path = root / PRESETS_DIR / f"{preset}.yaml"
    if not path.is_file():
        raise InputError(f"unknown preset {preset!r}: {path} not found; available: {available_presets(root)}")
    return path


def merged_params(root: Path, preset: str) -> tuple[dict, Params]:
    """``root/params.yaml`` with the preset merged in, raw and validated."""
    raw = _read_mapping(root / "params.yaml")
    if preset != DEFAULT_PRESET:
        path = preset_file(root, preset)
        raw = overlay(raw, _read_mapping(path))
        return raw, validate_params(raw, f"params.yaml with preset {path}")
    return raw, validate_params(raw, str(root / "params.yaml"))


def apply_preset(workdir: Path, preset: str) -> None:
    """Rewrite ``workdir/params.yaml`` with the preset merged in (validated first; ``toy``: no change)."""
    if preset == DEFAULT_PRESET:
        return
    raw, _ = merged_params(workdir, preset)
    write_text(workdir / "params.yaml", yaml.safe_dump(raw, sort_keys=False))
