"""Command lines: ``skyjo-evaluate`` (`evaluate`), ``skyjo-train`` (`train`) and
``skyjo-play`` (`play`); each parses its arguments and calls one library function."""

import _thread
import functools
import os
import select
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from agents.finalizers import finalizer_exceptions_handled

#: Exit code after Ctrl-C (128 + SIGINT), as a shell reports it; every command uses it.
EXIT_INTERRUPTED = 130

#: Exit code when the reader of standard output went away (128 + SIGPIPE), as a shell
#: reports a writer that a pipe's closed end stopped (``skyjo-compare ... | head``).
EXIT_BROKEN_PIPE = 141

#: How long after a Ctrl-C lost in a finalizer it is sent again
#: (`interrupts_kept_from_finalizers`): time enough for the main thread to leave the hook
#: that noticed it.
REDELIVERY_DELAY_SECONDS = 0.05


def silence_closed_stdout() -> None:
    """Send the rest of standard output to the null device after its reader closed the pipe.

    Python would otherwise print a ``BrokenPipeError`` traceback when it flushes standard
    output at exit; a command that catches ``BrokenPipeError`` calls this and goes on
    quietly (the Python documentation's advice for SIGPIPE).
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def stdout_reader_gone() -> bool:
    """Whether standard output is a pipe whose reading end has been closed (Linux reports
    such a pipe's write end as an error to ``poll``); False for a terminal, a file, or a
    pipe still read."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test's capture)
        return False


def quiet_on_closed_stdout(main: Callable[..., int]) -> Callable[..., int]:
    """A command's ``main`` that exits 141 quietly once standard output's reader has gone.

    A ``BrokenPipeError`` while standard output's pipe has no reader (``skyjo-play ... |
    head`` once head has exited, a ``| tee`` killed during ``skyjo-train``) sends the rest of
    the output to the null device (`silence_closed_stdout`) and returns `EXIT_BROKEN_PIPE`
    instead of a traceback. Any other broken pipe (a worker's socket) is raised as before.
    What the command saved before stays (a training run resumes from its last checkpoint).
    """

    @functools.wraps(main)
    def run(*args, **kwargs) -> int:
        try:
            status = main(*args, **kwargs)
            sys.stdout.flush()  # inside the try: a closed pipe fails here, not at exit
            return status
        except BrokenPipeError:
            if not stdout_reader_gone():
                raise
            silence_closed_stdout()
            return EXIT_BROKEN_PIPE

    return run


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


def interrupts_kept_from_finalizers():
    """A context (or decorator) in which a Ctrl-C whose ``KeyboardInterrupt`` was raised
    inside a finalizer is delivered again instead of lost.

    Python cannot pass on an exception raised in a ``__del__`` (Ray's ``ObjectRef.__del__``
    runs often between chunks): it would print "Exception ignored in ..." with a traceback
    and the command would go on as if no key had been pressed. Here the main thread gets the
    interrupt once more (`_thread.interrupt_main`), so the command stops as on any other
    Ctrl-C (or SIGTERM under `sigterm_as_ctrl_c`). Other exceptions raised in finalizers go
    to the hook that was there before (`agents.finalizers.finalizer_exceptions_handled`).
    """

    def send_again(exception: BaseException) -> bool:
        if threading.current_thread() is not threading.main_thread():
            return False
        # from another thread, a moment later: sent from here, the interrupt would be
        # raised inside the hook that called this, where it would be lost again
        threading.Timer(REDELIVERY_DELAY_SECONDS, _thread.interrupt_main).start()
        return True

    return finalizer_exceptions_handled(KeyboardInterrupt, send_again)
