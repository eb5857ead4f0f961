"""Run a callback right after a module is imported (or now, if it already is).

vLLM loads general plugins in its frontend, engine-core and worker processes. Patching the
model runner only when vLLM itself imports it keeps the plugin from importing the heavy worker
modules in processes that never use them, and from changing vLLM's import order (the CPU
platform registers its Triton-kernel fallbacks right after plugins load).

Every callback is guarded: an exception inside it is logged and recorded in ``FAILURES``, never
raised into vLLM's own import. An engine that enables the plugin checks ``FAILURES`` at start
and refuses to run (``compat.check_enabled_engine``): dormant is harmless, enabled is loud.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import logging
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

Callback = Callable[[ModuleType], None]

_lock = threading.Lock()
logger = logging.getLogger("vllm.autojudge")  # child of "vllm": printed with vLLM's handlers
FAILURES: dict[str, str] = {}  # "module -> callback": why the callback failed


def _guarded(module_name: str, callback: Callback | str) -> Callback:
    """``callback`` (or the ``"module:function"`` it names) with its exceptions logged and recorded."""
    name = callback if isinstance(callback, str) else getattr(callback, "__qualname__", repr(callback))

    def run(module: ModuleType) -> None:
        try:
            if isinstance(callback, str):
                owner, _, function = callback.partition(":")
                getattr(importlib.import_module(owner), function)(module)
            else:
                callback(module)
        except Exception as error:  # never break vLLM's import; enabled engines refuse to start
            FAILURES[f"{module_name} -> {name}"] = f"{type(error).__name__}: {error}"
            logger.error("autojudge: hook %s on %s failed: %s", name, module_name, error)

    return run


class _LoaderProxy(importlib.abc.Loader):
    """Delegates to the real loader and runs the callbacks after ``exec_module``."""

    def __init__(self, loader: Any, callbacks: list[Callback]) -> None:
        self._loader = loader
        self._callbacks = callbacks

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        module.__loader__ = self._loader
        for callback in self._callbacks:
            callback(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _PostImportFinder(importlib.abc.MetaPathFinder):
    """Meta-path finder that wraps the loader of watched modules; finds nothing itself."""

    def __init__(self) -> None:
        self.pending: dict[str, list[Callback]] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.pending:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        with _lock:
            callbacks = self.pending.pop(fullname, [])
        if callbacks:
            spec.loader = _LoaderProxy(spec.loader, callbacks)
        return spec


_finder = _PostImportFinder()


def when_imported(module_name: str, callback: Callback | str) -> None:
    """Call ``callback(module)`` once ``module_name`` is imported; immediately if it already is.

    ``callback`` may be a ``"package.module:function"`` string, imported only when it runs.
    """
    guarded = _guarded(module_name, callback)
    module = sys.modules.get(module_name)
    if module is not None:
        guarded(module)
        return
    with _lock:
        _finder.pending.setdefault(module_name, []).append(guarded)
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
