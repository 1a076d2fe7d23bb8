"""Command lines: ``skyjo-evaluate`` (`evaluate`), ``skyjo-train`` (`train`) and
``skyjo-play`` (`play`); each parses its arguments and calls one library function."""

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: Exit code after Ctrl-C (128 + SIGINT), as a shell reports it; every command uses it.
EXIT_INTERRUPTED = 130

#: Exit code when the reader of standard output went away (128 + SIGPIPE), as a shell
#: reports a writer that a pipe's closed end stopped (``skyjo-compare ... | head``).
EXIT_BROKEN_PIPE = 141


def silence_closed_stdout() -> None:
    """Send the rest of standard output to the null device after its reader closed the pipe.

    Python would otherwise print a ``BrokenPipeError`` traceback when it flushes standard
    output at exit; a command that catches ``BrokenPipeError`` calls this and goes on
    quietly (the Python documentation's advice for SIGPIPE).
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """Within the block, SIGTERM (``kill``, a scheduler's stop) raises ``KeyboardInterrupt``.

    A command then stops on SIGTERM as it does on Ctrl-C: its ``finally`` blocks run (a
    local Ray is shut down instead of leaving its workers behind, finished resume chunks
    stay), it prints ``interrupted`` and exits 130. Python's default would end the process
    at once. The previous handler comes back after the block; off the main thread (where
    signal handlers cannot be set) the block runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
