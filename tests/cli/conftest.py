"""Helpers for the command-line tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run_into_closed_pipe():
    """Run ``python -m MODULE ARGS`` with standard output a pipe whose reader is gone.

    The read end is closed before the command starts, so its first write to standard
    output fails as it does under ``| head`` once head has exited; standard input is
    empty. Returns the finished
    `subprocess.CompletedProcess` (its ``stderr`` text captured).
    """

    def run(module: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            return subprocess.run(
                [sys.executable, "-m", module, *args], stdout=write_end,
                stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd, timeout=300,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )  # fmt: skip
        finally:
            os.close(write_end)

    return run
