"""The one way skyjo-rl compiles code: ``numba.njit(cache=True, nogil=True)``, with a disk
cache that goes stale whenever any source of the `skyjo_env` package changes.

Numba keys a cached function on its own file only. Compiled code here calls compiled code
of other modules (the kernels, the encoder) and inlines their constants (`layout`,
`actions`), so after an edit elsewhere numba would happily load machine code built from
the old sources. Mixing a digest of every ``skyjo_env`` source file into the cache stamp
makes any edit recompile everything that depends on the package (a few seconds, once).
With ``NUMBA_DISABLE_JIT=1`` the decorated functions stay plain Python.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numba
from numba.core.caching import NullCache

PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def source_digest() -> str:
    """SHA-256 over every ``.py`` file of `skyjo_env` (sorted)."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


#: The stamp mixed into every cache entry compiled by `jit`.
PACKAGE_DIGEST = source_digest()


def jit(function: Callable) -> Callable:
    """Compile ``function`` with numba (nopython, no GIL, disk cache keyed on the package)."""
    dispatcher = numba.njit(cache=True, nogil=True)(function)
    cache = getattr(dispatcher, "_cache", None)
    if cache is None:  # NUMBA_DISABLE_JIT: a plain Python function
        return dispatcher
    try:
        cache_file = cache._cache_file
        cache_file._source_stamp = (cache_file._source_stamp, PACKAGE_DIGEST)
    except AttributeError:  # numba's cache internals changed: compile without a disk cache
        dispatcher._cache = NullCache()
    return dispatcher
