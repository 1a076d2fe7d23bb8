"""The one way skyjo-rl compiles code: ``numba.njit(cache=True, nogil=True)``, with a disk
cache that goes stale whenever any source of the `skyjo_env` package changes.

Numba keys a cached function on its own file only. Compiled code here calls compiled code
of other modules (the kernels, the encoder) and inlines their constants (`layout`,
`actions`), so after an edit elsewhere numba would happily load machine code built from
the old sources. So every function compiled by `jit` caches into a directory named by a
digest of every ``skyjo_env`` source file: after any edit the old directory is simply not
looked at, and everything that depends on the package recompiles (a few seconds, once).

The directory is chosen with numba's documented cache-directory setting (``NUMBA_CACHE_DIR``,
read from ``numba.config.CACHE_DIR`` when a cached function is created), set only while
`jit` creates the function, so other numba users in the process are unaffected. It lies
under ``NUMBA_CACHE_DIR`` when that is set, else in ``skyjo_env/__pycache__``; only the
`KEEP_CACHE_DIRS` most recently used digest directories are kept. With
``NUMBA_DISABLE_JIT=1`` the decorated functions stay plain Python (`JIT_DISABLED`); code
that calls them where uint64 arithmetic wraps on purpose does so inside `quiet_overflow`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numba
import numpy as np

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
#: True under ``NUMBA_DISABLE_JIT=1``: `jit` then returns the plain Python function (numba
#: reads the setting once, at import).
JIT_DISABLED = bool(numba.config.DISABLE_JIT)
#: Digest directories kept beside the current one (older ones are deleted at import).
KEEP_CACHE_DIRS = 4
CACHE_DIR_PREFIX = "skyjo_env-numba-"


def source_digest() -> str:
    """SHA-256 over every ``.py`` file of `skyjo_env` (sorted)."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


#: The digest of the package sources that names the cache directory of this process.
PACKAGE_DIGEST = source_digest()


def cache_base() -> Path:
    """Where the digest directories live: ``NUMBA_CACHE_DIR`` if set, else the package's
    own ``__pycache__`` (numba's default place for caches)."""
    configured = numba.config.CACHE_DIR
    return Path(configured) if configured else PACKAGE_ROOT / "__pycache__"


def _modified_time(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # deleted meanwhile by another process
        return 0.0


def prune_cache_dirs(base: Path, current: Path, keep: int = KEEP_CACHE_DIRS) -> list[Path]:
    """Delete digest directories under ``base`` but ``current`` and the ``keep`` most
    recently modified others; returns the deleted ones.

    A process still running on a deleted directory only loses its cache: numba recreates
    the directory when it next saves and recompiles what it cannot load.
    """
    others = [
        path for path in base.glob(CACHE_DIR_PREFIX + "*") if path.is_dir() and path != current
    ]
    others.sort(key=_modified_time, reverse=True)
    stale = others[keep:]
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)
    return stale


def _writable_cache_dir() -> Path | None:
    directory = cache_base() / f"{CACHE_DIR_PREFIX}{PACKAGE_DIGEST[:16]}"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=directory).close()
        os.utime(directory)  # marks it as recently used for `prune_cache_dirs`
    except OSError:
        return None
    prune_cache_dirs(directory.parent, directory)
    return directory


#: This process's cache directory; None when none is writable (then nothing is cached on
#: disk: numba's fallback locations are not keyed on the package digest).
CACHE_DIR: Path | None = _writable_cache_dir()


@contextlib.contextmanager
def _numba_cache_dir(directory: Path) -> Iterator[None]:
    # numba reads CACHE_DIR when a cached dispatcher is created (not when it compiles);
    # a user's own locator list would bypass the directory, so it is switched off too
    changes = {"CACHE_DIR": str(directory), "CACHE_LOCATOR_CLASSES": ""}
    saved = {name: getattr(numba.config, name) for name in changes if hasattr(numba.config, name)}
    for name in saved:
        setattr(numba.config, name, changes[name])
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(numba.config, name, value)


def jit(function: Callable) -> Callable:
    """Compile ``function`` with numba (nopython, no GIL, disk cache keyed on the package)."""
    if CACHE_DIR is None:
        return numba.njit(cache=False, nogil=True)(function)
    with _numba_cache_dir(CACHE_DIR):
        return numba.njit(cache=True, nogil=True)(function)


def quiet_overflow() -> contextlib.AbstractContextManager:
    """The context to call compiled code in where uint64 arithmetic wraps on purpose.

    The kernels' random streams (splitmix64) rely on wrapping uint64 arithmetic. Compiled,
    it wraps silently; run as Python (``NUMBA_DISABLE_JIT=1``) it runs on numpy scalars,
    which report the wrap as an overflow. So this is ``np.errstate(over="ignore")`` when
    the JIT is disabled, and a null context (nothing to pay) otherwise.
    """
    if JIT_DISABLED:
        return np.errstate(over="ignore")
    return contextlib.nullcontext()
