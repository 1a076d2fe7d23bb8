"""Exceptions raised inside finalizers (``__del__``), where Python cannot pass them on.

A signal handler that raises (a stop during the warm start, Ctrl-C) can run while a
finalizer runs: Ray's ``ObjectRef.__del__``, llvmlite's while numba compiles. Python then
prints "Exception ignored in ..." with a traceback and goes on.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def finalizer_exceptions_handled(kind: type[BaseException],
                                 handle: Callable[[BaseException], bool]) -> Iterator[None]:
    """Within the block, an exception of type ``kind`` raised inside a finalizer goes to
    ``handle`` instead of being printed.

    ``handle(exception)`` returns whether it dealt with the exception; when it returns False
    (and for any other kind of exception) the hook that was there before reports it, as
    Python would have. That hook is back after the block.
    """
    previous_hook = sys.unraisablehook

    def hook(unraisable) -> None:
        exception = unraisable.exc_value
        if not (isinstance(exception, kind) and handle(exception)):
            previous_hook(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
