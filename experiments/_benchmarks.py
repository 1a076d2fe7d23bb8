"""Helper modules of ``benchmarks/`` for the scripts here (both folders hold scripts, not
packages): `benchmark_module` imports one by its path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def benchmark_module(name: str) -> ModuleType:
    """Import ``benchmarks/<name>.py`` (once per process) and return it.

    Args:
        name: The script's file name without ``.py``, e.g. ``"machine_load"``.

    Returns:
        The module, also registered in `sys.modules` under ``name``.

    Raises:
        FileNotFoundError: ``benchmarks/<name>.py`` does not exist.
    """
    if name in sys.modules:
        return sys.modules[name]
    path = BENCHMARKS / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"benchmark helper {str(path)!r} does not exist")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look a module up there
    spec.loader.exec_module(module)
    return module
