"""The run directory checked before any work: `check_run_dir` makes sure a run can write
its files there, so that a path that is a file, a read-only directory or a parent that
cannot be created fails in one line at the start, not as a traceback after the warm start
(minutes of imitation games and fitting lost)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from agents.training.config import TrainConfigError
from skyjo_env.core.safe_yaml import show_path

#: Entries of a run directory that must be directories when they exist (the trainer
#: writes into them): `agents.training.trainer` lists the layout.
RUN_SUBDIRECTORIES = ("checkpoints", "snapshots", "tb", "expert")
#: Entries that must be files when they exist (the trainer writes or appends them).
RUN_FILES = ("config.yaml", "eval.jsonl", "best.zip")


class RunDirError(TrainConfigError):
    """A run directory a run cannot write to: one line naming the path."""


def check_run_dir(run_dir: str | Path) -> Path:
    """Create ``run_dir`` (and its parents) if needed and check that the run can write its
    files in it; before any work of a run.

    Returns:
        ``run_dir`` as a `Path`.

    Raises:
        RunDirError: ``run_dir`` (or a parent) is a file, cannot be created, is not
            writable, or holds a file where the run writes a directory (or the reverse).
    """
    path = check_writable_dir(run_dir, "run directory", "--run-dir")
    where = f"run directory {show_path(path)}"
    for name in RUN_SUBDIRECTORIES:
        if (path / name).exists() and not (path / name).is_dir():
            raise RunDirError(f"{where} holds a file {name!r} where the run writes a directory")
    for name in RUN_FILES:
        if (path / name).is_dir():
            raise RunDirError(f"{where} holds a directory {name!r} where the run writes a file")
    return path


def check_writable_dir(directory: str | Path, what: str, option: str) -> Path:
    """Create ``directory`` (and its parents) if needed and check that a file can be
    written in it.

    Args:
        directory: The directory.
        what: What it is, for messages (``"sweep directory"``).
        option: The command-line option that names it (``"--sweep-dir"``).

    Returns:
        ``directory`` as a `Path`.

    Raises:
        RunDirError: ``directory`` (or a parent) is a file, cannot be created or is not
            writable (one line naming the path).
    """
    path = Path(directory)
    where = f"{what} {show_path(path)}"
    blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        problem = ("is a file" if blocker == path
                   else f"cannot be created: {show_path(blocker)} is a file")
        raise RunDirError(f"{where} {problem}, not a directory; choose another {option}")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise RunDirError(f"{where} cannot be created: {error.strerror or error}") from None
    _check_writable(path, where)
    return path


def _check_writable(path: Path, where: str) -> None:
    """Write and remove a probe file (permissions alone do not tell: a read-only mount,
    or root, who passes every permission check)."""
    try:
        descriptor, probe = tempfile.mkstemp(prefix=".write-probe-", dir=path)
    except OSError as error:
        raise RunDirError(f"{where} is not writable: {error.strerror or error}") from None
    os.close(descriptor)
    os.unlink(probe)


__all__ = ["RUN_FILES", "RUN_SUBDIRECTORIES", "RunDirError", "check_run_dir", "check_writable_dir"]
