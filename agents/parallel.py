"""Work on Ray workers: the one Ray session and the one task loop of skyjo-rl.

* `ray_session`: Ray for the duration of a ``with`` block. Connects to a cluster (which
  must answer as a Ray head within seconds, `check_reachable`: Ray alone retries a wrong
  address, or a port that is not Ray's, for minutes) or starts a
  local Ray with ``workers`` CPUs, without its token-authentication notice
  (`quiet_token_auth_notice`), keeping the caller's SIGTERM handler; a Ray already
  running in this process is used as is and left running.
* `TaskPool`: Ray tasks of one function, at most ``limit`` running at once, each filed
  under a key; a task's own exception comes back as itself (`task_result`), Ray's own
  failures as `DistributedRunError`; what still runs is cancelled by `TaskPool.cancel_all`.
* `run_chunks`: ``[task(chunk) for chunk in chunks]`` in this process (``workers=0``) or
  as Ray tasks, results in the order of ``chunks``. A task that derives all its randomness
  from its chunk index gives the same results with 0, 1 or N workers. Tournaments
  (`agents.evaluation.distributed`) use it; imitation and expert data should too.

Ray is imported only when a session starts (`import_ray`), never with this module, so the
in-process paths never load it.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np

from skyjo_env.core.errors import one_line, shorten

#: Seconds to wait for a cluster address to accept a connection before giving up (Ray
#: itself retries a wrong address for minutes).
DEFAULT_CONNECT_TIMEOUT_S = 5.0

INSTALL_HINT = 'install the extra: pip install -e ".[distributed]"'

#: The Ray logger that announces, on every new local cluster, that token authentication
#: is on (`quiet_token_auth_notice`).
TOKEN_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"

Result = TypeVar("Result")


class DistributedSetupError(ValueError):
    """Ray is missing, a cluster cannot be reached, or a worker option is bad."""


class DistributedRunError(RuntimeError):
    """Ray lost a task for a reason of its own (a worker or node died, out of memory)."""


class ChunksStopped(Exception):
    """`run_chunks` stopped early because its ``should_stop`` answered True."""


# ---------------------------------------------------------------- the session


def import_ray(purpose: str = "running on Ray workers"):
    """The ``ray`` module.

    Args:
        purpose: What needs Ray, for the message (``"distributed evaluation"``).

    Raises:
        DistributedSetupError: Ray is not installed (the message has the install hint).
    """
    try:
        import ray
    except ImportError as error:
        raise DistributedSetupError(
            f"{purpose} needs Ray, which is not installed ({error}); {INSTALL_HINT}"
        ) from error
    return ray


def check_workers(workers: Any) -> int | None:
    """``workers`` as an int >= 1, or None; raises `DistributedSetupError` otherwise."""
    if workers is None:
        return None
    if not isinstance(workers, (int, np.integer)) or isinstance(workers, bool) or workers < 1:
        raise DistributedSetupError(f"workers must be an int >= 1, got {workers!r}")
    return int(workers)


def _host_port(address: str) -> tuple[str, int]:
    """``(host, port)`` of ``HOST:PORT`` or ``ray://HOST:PORT``."""
    text = address.split("://", 1)[1] if "://" in address else address
    host, colon, port = text.rpartition(":")
    if not colon or not host or not port.isdigit():
        raise DistributedSetupError(
            f"Ray address {shorten(address, 100)!r} is not HOST:PORT (e.g. 10.0.0.1:6379, the "
            "address 'ray start --head' prints)"
        )
    return host.strip("[]"), int(port)


#: What a client sends first on an HTTP/2 connection (RFC 9113 §3.4): the preface and an
#: empty SETTINGS frame. Ray's head (its GCS, and the Ray Client server of ``ray://``)
#: speaks gRPC, which is HTTP/2: it answers with a SETTINGS frame of its own.
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_HTTP2_FRAME_HEADER_BYTES = 9
_HTTP2_SETTINGS = 0x4


def check_reachable(address: str, timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S) -> None:
    """Raise `DistributedSetupError` unless ``address`` answers as a Ray head in time.

    A TCP connection is not enough: a port that listens but is not Ray's (the dashboard's
    8265, any web server, a silent listener) makes ``ray.init`` retry for minutes. So the
    whole check, connecting included, is bounded by ``timeout_s``: connect, send the
    HTTP/2 connection preface, and expect the HTTP/2 SETTINGS frame a gRPC server (Ray's
    head) answers with. ``auto`` (Ray's own lookup of a local cluster) is left to Ray, and
    so is a head with TLS on (``RAY_USE_TLS``), which would not answer in clear text.
    """
    if address == "auto":
        return
    host, port = _host_port(address)
    deadline = time.monotonic() + timeout_s
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as connection:
            if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
                return
            answer = _http2_answer(connection, deadline)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise DistributedSetupError(
            f"cannot reach a Ray cluster at {shorten(address, 100)!r} within {timeout_s:g} s "
            f"({reason}); start one with 'ray start --head --port=6379' and pass its HOST:PORT"
        ) from error
    if len(answer) < _HTTP2_FRAME_HEADER_BYTES or answer[3] != _HTTP2_SETTINGS:
        if not answer:
            heard = f"did not answer within {timeout_s:g} s"
        elif answer.startswith(b"HTTP/"):
            heard = "answers HTTP/1 (a web server, e.g. Ray's dashboard on 8265?)"
        else:
            heard = "answers, but not in Ray's protocol (gRPC)"
        raise DistributedSetupError(
            f"{shorten(address, 100)!r} is not a Ray head: it {heard}; pass the address "
            "'ray start --head' prints (HOST:6379 by default)"
        )


def _http2_answer(connection: socket.socket, deadline: float) -> bytes:
    """The first bytes (at most a frame header) a peer answers the HTTP/2 preface with,
    by ``deadline`` (``time.monotonic``); ``b""`` when it says nothing or hangs up."""
    connection.sendall(_HTTP2_PREFACE)
    answer = b""
    while len(answer) < _HTTP2_FRAME_HEADER_BYTES:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        connection.settimeout(left)
        try:
            chunk = connection.recv(_HTTP2_FRAME_HEADER_BYTES - len(answer))
        except (TimeoutError, ConnectionResetError):
            break
        if not chunk:
            break
        answer += chunk
    return answer


class _TokenAuthNoticeFilter(logging.Filter):
    """Drops Ray's "Token authentication is enabled" notice, passes every other record."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Token authentication is enabled")


@contextmanager
def quiet_token_auth_notice() -> Iterator[None]:
    """Within the block, Ray's notice that a new local cluster has token authentication
    on is not logged.

    Ray turns token authentication on by itself for a new local cluster (the token lives
    in ``~/.ray/auth_token``) and logs a WARNING saying so on every start, which made
    every ``evaluate.py --workers N`` run open with a warning about nothing wrong. The
    protection stays as Ray sets it; only that one record is dropped (the warning that
    authentication is *disabled*, and everything else, still shows).
    """
    logger = logging.getLogger(TOKEN_AUTH_LOGGER)
    notice_filter = _TokenAuthNoticeFilter()
    logger.addFilter(notice_filter)
    try:
        yield
    finally:
        logger.removeFilter(notice_filter)


@contextmanager
def ray_session(
    workers: int | None = None,
    address: str | None = None,
    *,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    purpose: str = "running on Ray workers",
) -> Iterator[Any]:
    """Ray, initialised for the duration of the ``with`` block; yields the ``ray`` module.

    ``address``, when given, must answer as a Ray head within ``connect_timeout_s``
    (`check_reachable`: a wrong address, or a port that is not Ray's, fails fast instead
    of after Ray's minutes of retries). If Ray is already
    initialised in this process it is used as is and left running. Otherwise ``address``
    connects to that cluster (``ray.init(address=...)``), or a local Ray with
    ``workers`` CPUs (all of them when None) is started; either is shut down (the driver
    disconnects; a cluster keeps running) when the block ends.

    Args:
        workers: CPUs of a local Ray started here (None: all); an int >= 1 or None.
        address: ``HOST:PORT`` (or ``ray://HOST:PORT``, ``auto``) of a cluster to join.
        connect_timeout_s: How long ``address`` may take to accept a connection.
        purpose: What needs Ray, for the message when it is not installed.

    Raises:
        DistributedSetupError: Ray not installed, bad ``workers``, or the cluster cannot
            be reached.
    """
    workers = check_workers(workers)
    ray = import_ray(purpose)
    if address is not None:
        check_reachable(address, connect_timeout_s)
    if ray.is_initialized():
        yield ray
        return
    with quiet_token_auth_notice():
        _init_ray(ray, workers, address)
    try:
        yield ray
    finally:
        ray.shutdown()


def _init_ray(ray, workers: int | None, address: str | None) -> None:
    """``ray.init`` for `ray_session`: connect to ``address``, or start a local Ray with
    ``workers`` CPUs; Ray's driver logs kept to warnings, the caller's SIGTERM handler
    kept. Raises `DistributedSetupError` in one line when Ray cannot start or connect."""
    quiet = {"logging_level": logging.WARNING, "log_to_driver": False}
    # ray.init installs its own SIGTERM handler (sys.exit); keep the caller's (the trainer
    # stops cleanly on SIGTERM)
    main_thread = threading.current_thread() is threading.main_thread()
    previous_sigterm = signal.getsignal(signal.SIGTERM) if main_thread else None
    try:
        if address is not None:
            try:
                ray.init(address=address, **quiet)
            except Exception as error:  # Ray's own errors vary by version and cause
                raise DistributedSetupError(
                    f"cannot connect to the Ray cluster at {shorten(address, 100)!r}: "
                    f"{one_line(error)}"
                ) from error
        else:
            try:
                ray.init(num_cpus=workers, include_dashboard=False, **quiet)
            except Exception as error:  # e.g. no room for Ray's shared memory or sockets
                raise DistributedSetupError(
                    f"cannot start a local Ray with {workers or 'all'} CPUs: {one_line(error)}"
                ) from error
    finally:
        if previous_sigterm is not None:
            signal.signal(signal.SIGTERM, previous_sigterm)


# ---------------------------------------------------------------- tasks


def task_result(ray, ref) -> Any:
    """``ray.get(ref)``, re-raising an exception of the task as the task raised it.

    Raises:
        Exception: The task's own exception, unwrapped from Ray's ``RayTaskError``.
        DistributedRunError: Ray's own failure (not an exception of the task's code), in
            one line.
    """
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as error:
        cause = getattr(error, "cause", None)
        if isinstance(cause, Exception):
            raise cause from None
        raise DistributedRunError(f"a Ray task failed: {one_line(error)}") from error
    except ray.exceptions.RayError as error:
        raise DistributedRunError(f"a Ray task failed: {one_line(error)}") from error


class TaskPool:
    """Ray tasks of one function, at most ``limit`` running at once, each under a key.

    Use inside `ray_session`; call `cancel_all` when the work is abandoned (an error, a
    stop), e.g. in a ``finally``. Cancelling force-kills the worker of a running task: a
    task stuck in compiled code would not see a polite interrupt.
    """

    def __init__(self, ray, function: Callable[..., Any], limit: int | None = None,
                 **options: Any):
        """Args:
            ray: The ``ray`` module (initialised).
            function: What each task runs (importable on the workers, or a local function
                that Ray pickles by value).
            limit: Most tasks running at once; None: no limit (Ray queues what its CPUs
                cannot run yet).
            **options: ``ray.remote`` options; ``num_cpus`` defaults to 1.
        """
        self.ray = ray
        self.limit = limit
        self._remote = ray.remote(**{"num_cpus": 1, **options})(function)
        self._pending: dict[Any, Any] = {}  # object ref -> key

    def __len__(self) -> int:
        """Tasks submitted and not yet collected."""
        return len(self._pending)

    def has_room(self) -> bool:
        """Whether another task may start now (fewer than ``limit`` running)."""
        return self.limit is None or len(self._pending) < self.limit

    def submit(self, key: Any, *args: Any) -> None:
        """Start ``function(*args)`` as a task, filed under ``key``."""
        self._pending[self._remote.remote(*args)] = key

    def wait_one(self) -> tuple[Any, Any]:
        """Wait for the next task to end: ``(key, ref)``; `result` gives its result."""
        (ref,), _ = self.ray.wait(list(self._pending), num_returns=1)
        return self._pending.pop(ref), ref

    def result(self, ref: Any) -> Any:
        """The result of a task `wait_one` returned (see `task_result` for errors)."""
        return task_result(self.ray, ref)

    def cancel_all(self) -> list[Any]:
        """Cancel every task not yet collected; returns their keys."""
        for ref in self._pending:
            self.ray.cancel(ref, force=True)
        keys, self._pending = list(self._pending.values()), {}
        return keys


def _call(task: Callable[[int], Result], chunk: int) -> Result:
    return task(chunk)


def run_chunks(
    task: Callable[[int], Result],
    chunks: Sequence[int],
    workers: int | None = 0,
    address: str | None = None,
    *,
    on_result: Callable[[int, Result], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> list[Result]:
    """``[task(chunk) for chunk in chunks]``, in this process or as Ray tasks.

    ``task`` must derive all its randomness from its chunk index (e.g. a
    ``SeedSequence(seed, spawn_key=(chunk,))``): then where and in which order the chunks
    run changes nothing, and the results are the same for any ``workers``.

    Args:
        task: ``task(chunk) -> result``; on Ray, picklable (a module-level function, a
            ``functools.partial`` of one, or a local function Ray pickles by value). It is
            sent to the object store once, not once per chunk.
        chunks: The chunk indices to run.
        workers: 0 runs the chunks here, one after the other; N >= 1 keeps at most N Ray
            tasks (one CPU each) running; None runs every chunk as a Ray task at once (Ray
            queues what its CPUs cannot run yet). With Ray, a Ray already initialised in
            this process is used, else `ray_session` starts or joins one for the call.
        address: Ray cluster to join when none is initialised (see `ray_session`).
        on_result: Called in this process with ``(chunk, result)`` as each chunk ends, in
            the order they end (progress, saving finished chunks). An exception it raises
            abandons the work, as a task's does.
        should_stop: Asked before each chunk starts and, on Ray, after each one ends;
            True abandons the work.

    Returns:
        The results, in the order of ``chunks``.

    Raises:
        ChunksStopped: ``should_stop`` answered True (running Ray tasks are cancelled).
        Exception: A task's own exception, as the task raised it (the other tasks are
            cancelled).
        DistributedRunError: Ray lost a task (a worker or node died).
        DistributedSetupError: Ray is needed and missing, or cannot start or connect.
        ValueError: ``workers`` is not an int >= 0 or None.
    """
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 0
    ):
        raise ValueError(f"workers={workers!r} is invalid: allowed an int >= 0 or None")
    stop = should_stop or (lambda: False)
    ended = on_result or (lambda chunk, result: None)
    chunks = list(chunks)
    if workers == 0:
        results = []
        for chunk in chunks:
            if stop():
                raise ChunksStopped
            results.append(task(chunk))
            ended(chunk, results[-1])
        return results
    with ray_session(workers, address) as ray:
        return _run_on_ray(ray, task, chunks, None if workers is None else int(workers),
                           ended, stop)


def _run_on_ray(
    ray: Any,
    task: Callable[[int], Result],
    chunks: list[int],
    limit: int | None,
    ended: Callable[[int, Result], None],
    stop: Callable[[], bool],
) -> list[Result]:
    """`run_chunks` on a running Ray: at most ``limit`` tasks at once, results in order."""
    pool = TaskPool(ray, _call, limit)
    shared_task = ray.put(task)
    results: dict[int, Result] = {}

    def collect_one() -> None:
        position, ref = pool.wait_one()
        results[position] = pool.result(ref)
        ended(chunks[position], results[position])

    try:
        for position, chunk in enumerate(chunks):
            if not pool.has_room():
                collect_one()
            if stop():
                raise ChunksStopped
            pool.submit(position, shared_task, chunk)
        while len(pool):
            collect_one()
            if stop():
                raise ChunksStopped
    finally:
        pool.cancel_all()  # after an error, a stop or Ctrl-C: stop what is still running
    return [results[position] for position in range(len(chunks))]


__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "INSTALL_HINT",
    "TOKEN_AUTH_LOGGER",
    "ChunksStopped",
    "DistributedRunError",
    "DistributedSetupError",
    "TaskPool",
    "check_reachable",
    "check_workers",
    "import_ray",
    "quiet_token_auth_notice",
    "ray_session",
    "run_chunks",
    "task_result",
]
