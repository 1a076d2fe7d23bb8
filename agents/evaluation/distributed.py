"""Tournaments sharded over Ray tasks: the games and statistics of `evaluate_agents`, on
many cores or machines (``evaluate.py --workers N`` / ``--ray-address ADDR``).

Design:

* **Fixed chunks, so the worker count changes nothing.** The deal groups of a tournament
  are cut into chunks of ``chunk_deals`` consecutive groups (default
  `default_chunk_deals`: the deals in `MIN_CHUNKS` chunks of at most `DEFAULT_CHUNK_DEALS`
  groups, so that a small tournament of a slow agent still keeps every worker busy; the
  size never depends on the number of workers). Each chunk is
  one Ray task that builds the agents from their specs, seeded with
  ``shard_agent_seed(seed, chunk, i)`` (``SeedSequence(seed, spawn_key=(2, chunk, i))``),
  and plays every rotation of its deal groups in the batched engine
  (`agents.evaluation.games.play_deals`). Workers only decide who plays which chunk, so
  the records are identical with 1, 2 or N workers; merged in deal order they give the
  same statistics, ratings and JSON report (timing fields aside).
* **Same deals as one process.** Deal group ``d`` is dealt from the in-process deal seeds
  (`deal_seeds`), so agents without randomness of their own (``ev``, ``greedy``, a
  deterministic ``ppo:PATH``) play exactly the in-process games and the report equals
  ``evaluate.py`` without Ray. Agents that draw random numbers (``random``, a sampling
  policy) get a fresh generator per chunk, so their games differ from the in-process run
  (which seeds each agent once), but never between worker counts.
* **Specs travel, not objects.** A task receives the agent specs and ``rules.to_dict()``
  and builds everything with `agents.registry.make_agent`. The project (and any
  ``package.module:ClassName`` agent) must be importable on every node, and a
  ``ppo:PATH`` checkpoint readable at PATH on every node (on a local Ray it is the same
  filesystem). Each task uses one CPU (and one torch thread).
* **Errors as in one process.** An agent that fails inside a task (`AgentActionError`,
  `AgentSpecError`, a checkpoint error) is re-raised in the driver as that very exception,
  unwrapped from Ray's ``RayTaskError``; the remaining chunks are cancelled.
* **Ray on demand.** Ray is imported only when `ray_session` or a tournament here runs,
  never when this module is imported; the single-process path never imports it.
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from agents.evaluation.games import (
    DEFAULT_MAX_BATCH,
    GameRecords,
    check_seed,
    deal_groups,
    display_names,
    games_per_deal,
    play_deals,
    progress_bar,
    set_torch_threads,
    shard_agent_seed,
)
from agents.evaluation.resume import ChunkStore, tournament_identity
from agents.evaluation.tournament import TournamentResult, tournament_result
from skyjo_env.core.rules import SkyjoRules

#: Deal groups per chunk (one Ray task): 512 games of 2 players, large enough for the
#: batched engine to run near full speed, small enough to spread over a few workers.
DEFAULT_CHUNK_DEALS = 256

#: Fewest chunks a tournament is cut into by default (a deal group per chunk at least):
#: a small tournament of a slow search agent would otherwise be one chunk of 256 deal
#: groups, played by one worker however many there are.
MIN_CHUNKS = 16

#: Seconds to wait for a cluster address to accept a connection before giving up (Ray
#: itself retries a wrong address for minutes).
DEFAULT_CONNECT_TIMEOUT_S = 5.0

INSTALL_HINT = 'install the extra: pip install -e ".[distributed]"'


class DistributedSetupError(ValueError):
    """Ray is missing, a cluster cannot be reached, or a sharding option is bad."""


class DistributedRunError(RuntimeError):
    """Ray lost a task for a reason of its own (a worker or node died, out of memory)."""


def import_ray():
    """The ``ray`` module; raises `DistributedSetupError` (with the install hint) without it."""
    try:
        import ray
    except ImportError as error:
        raise DistributedSetupError(
            f"distributed evaluation needs Ray, which is not installed ({error}); "
            f"{INSTALL_HINT}"
        ) from error
    return ray


def check_workers(workers: Any) -> int | None:
    """``workers`` as an int >= 1, or None; raises `DistributedSetupError` otherwise."""
    if workers is None:
        return None
    if not isinstance(workers, (int, np.integer)) or isinstance(workers, bool) or workers < 1:
        raise DistributedSetupError(f"workers must be an int >= 1, got {workers!r}")
    return int(workers)


def check_chunk_deals(chunk_deals: Any) -> int:
    """``chunk_deals`` as an int >= 1; raises `DistributedSetupError` otherwise."""
    if (
        not isinstance(chunk_deals, (int, np.integer))
        or isinstance(chunk_deals, bool)
        or chunk_deals < 1
    ):
        raise DistributedSetupError(f"chunk_deals must be an int >= 1, got {chunk_deals!r}")
    return int(chunk_deals)


def default_chunk_deals(num_deals: int) -> int:
    """Deal groups per chunk when none is given: ``num_deals`` split into `MIN_CHUNKS`
    chunks, at most `DEFAULT_CHUNK_DEALS` and at least 1 per chunk."""
    return max(1, min(DEFAULT_CHUNK_DEALS, -(-num_deals // MIN_CHUNKS)))


def chunk_ranges(num_deals: int, chunk_deals: int) -> list[range]:
    """The deal groups of each chunk: ``range(0, c), range(c, 2c), ...`` up to ``num_deals``."""
    return [
        range(start, min(start + chunk_deals, num_deals))
        for start in range(0, num_deals, chunk_deals)
    ]


def _host_port(address: str) -> tuple[str, int]:
    """``(host, port)`` of ``HOST:PORT`` or ``ray://HOST:PORT``."""
    text = address.split("://", 1)[1] if "://" in address else address
    host, colon, port = text.rpartition(":")
    if not colon or not host or not port.isdigit():
        raise DistributedSetupError(
            f"Ray address {address!r} is not HOST:PORT (e.g. 10.0.0.1:6379, the address "
            "'ray start --head' prints)"
        )
    return host.strip("[]"), int(port)


def check_reachable(address: str, timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S) -> None:
    """Raise `DistributedSetupError` unless ``address`` accepts a TCP connection in time.

    ``auto`` (Ray's own lookup of a local cluster) is left to Ray.
    """
    if address == "auto":
        return
    host, port = _host_port(address)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise DistributedSetupError(
            f"cannot reach a Ray cluster at {address!r} within {timeout_s:g} s ({reason}); "
            "start one with 'ray start --head --port=6379' and pass its HOST:PORT"
        ) from error


#: The Ray logger that announces, on every new local cluster, that token authentication
#: is on (`quiet_token_auth_notice`).
TOKEN_AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"


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
) -> Iterator[Any]:
    """Ray, initialised for the duration of the ``with`` block; yields the ``ray`` module.

    ``address``, when given, must accept a connection within ``connect_timeout_s`` (a
    wrong address fails fast instead of after Ray's minutes of retries). If Ray is already
    initialised in this process it is used as is and left running. Otherwise ``address``
    connects to that cluster (``ray.init(address=...)``), or a local Ray with
    ``workers`` CPUs (all of them when None) is started; either is shut down (the driver
    disconnects; a cluster keeps running) when the block ends.

    Raises:
        DistributedSetupError: Ray not installed, bad ``workers``, or the cluster cannot
            be reached.
    """
    workers = check_workers(workers)
    ray = import_ray()
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
                    f"cannot connect to the Ray cluster at {address!r}: "
                    f"{type(error).__name__}: {error}"
                ) from error
        else:
            try:
                ray.init(num_cpus=workers, include_dashboard=False, **quiet)
            except Exception as error:  # e.g. no room for Ray's shared memory or sockets
                raise DistributedSetupError(
                    f"cannot start a local Ray with {workers or 'all'} CPUs: "
                    f"{type(error).__name__}: {_first_line(error)}"
                ) from error
    finally:
        if previous_sigterm is not None:
            signal.signal(signal.SIGTERM, previous_sigterm)


def play_chunk(
    specs: Sequence[str],
    rules_data: dict[str, Any],
    seed: int,
    chunk: int,
    deals: range,
    *,
    max_batch: int = DEFAULT_MAX_BATCH,
    torch_threads: int | None = None,
    seating: str = "cyclic",
) -> tuple[GameRecords, list[str]]:
    """Build the agents of one chunk from their specs and play its deal groups.

    Runs inside a Ray task (or anywhere: the result does not depend on where).

    Args:
        specs: One agent spec per seat position (see `agents.registry.make_agent`).
        rules_data: ``rules.to_dict()`` of the rules, ``num_players == len(specs)``.
        seed: The tournament's master seed.
        chunk: The chunk's index (seeds its agents' generators).
        deals: The chunk's deal groups.
        max_batch: Most games stepped together.
        torch_threads: Threads torch may use once the agents are built (None: unchanged).
        seating: ``cyclic`` or ``all`` (`agents.evaluation.games.seat_arrangements`).

    Returns:
        ``(records, names)``: the chunk's records in deal order, and the agents' display
        names (as the in-process tournament names them).

    Raises:
        AgentSpecError: a spec cannot be built here. AgentActionError: an agent failed.
    """
    from agents.registry import make_agent

    rules = SkyjoRules.from_dict(rules_data)
    agents = [
        make_agent(spec, rules, shard_agent_seed(seed, chunk, i)) for i, spec in enumerate(specs)
    ]
    if torch_threads is not None:
        set_torch_threads(torch_threads)
    names = display_names([agent.name for agent in agents])
    records, _ = play_deals(
        agents,
        rules,
        seed,
        deals,
        names=names,
        specs=list(specs),
        progress=False,
        max_batch=max_batch,
        seating=seating,
    )
    return records, names


def _chunk_task(specs, rules_data, seed, chunk, deals, max_batch, seating):
    """The body of one Ray task: one CPU, one torch thread."""
    return play_chunk(specs, rules_data, seed, chunk, deals, max_batch=max_batch,
                      torch_threads=1, seating=seating)


def _first_line(error: BaseException) -> str:
    return next(iter(str(error).strip().splitlines()), "")


def _result(ray, ref):
    """``ray.get(ref)``, re-raising an exception of the task as the task raised it.

    Raises:
        DistributedRunError: Ray's own failure (not an exception of the task's code).
    """
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as error:
        cause = getattr(error, "cause", None)
        if isinstance(cause, Exception):
            raise cause from None
        raise DistributedRunError(
            f"a Ray task failed: {type(error).__name__}: {_first_line(error)}"
        ) from error
    except ray.exceptions.RayError as error:
        raise DistributedRunError(
            f"a Ray task failed: {type(error).__name__}: {_first_line(error)}"
        ) from error


def play_sharded(
    specs: Sequence[str],
    rules: SkyjoRules,
    games: int,
    seed: int,
    *,
    workers: int | None = None,
    chunk_deals: int | None = None,
    progress: bool | None = None,
    max_batch: int = DEFAULT_MAX_BATCH,
    store: ChunkStore | None = None,
    seating: str = "cyclic",
) -> tuple[GameRecords, list[str], float]:
    """Play a tournament's games as Ray tasks, one per chunk of deal groups (Ray must be
    initialised, e.g. by `ray_session`, unless ``store`` keeps every chunk already).

    Args:
        specs: One agent spec per seat position; ``len(specs) == rules.num_players``.
        rules: The rules.
        games: Games wanted (1 to `max_games`), rounded up to whole deal groups.
        seed: Master seed.
        workers: Most chunks running at once (None: as many as Ray schedules).
        chunk_deals: Deal groups per chunk (fixes the agents' random streams; see the
            module docstring); None: `default_chunk_deals`.
        progress: Progress bar over the games, advanced as chunks finish; None = only on a
            terminal.
        max_batch: Most games one task steps together.
        store: Finished chunks kept on disk (`agents.evaluation.resume`): those it holds
            are read instead of played, and every chunk finished here is added to it.
        seating: ``cyclic`` or ``all`` (`agents.evaluation.games.seat_arrangements`).

    Returns:
        ``(records, names, elapsed_s)``: every game in deal order, the agents' display
        names, and the wall time from the first task submitted to the last result (plus,
        with ``store``, the wall time of the earlier runs it records).

    Raises:
        ValueError: Bad arguments. AgentActionError, AgentSpecError: as raised in a task.
        DistributedRunError: Ray lost a task (a worker or node died).
        ResumeError: ``store`` holds a damaged chunk.
    """
    players = rules.num_players
    if len(specs) != players:
        raise ValueError(f"{len(specs)} specs for {players} seats; give one spec per seat")
    seed = check_seed(seed)
    group = games_per_deal(players, seating)
    num_deals = deal_groups(games, players, seating)
    if chunk_deals is None:
        chunk_deals = default_chunk_deals(num_deals)
    chunks = chunk_ranges(num_deals, check_chunk_deals(chunk_deals))
    limit = check_workers(workers) or len(chunks)
    parts: list[GameRecords | None] = [None] * len(chunks)
    names: list[str] = []
    earlier_s = 0.0
    if store is not None:
        earlier_s = store.elapsed_s
        for index, deals in enumerate(chunks):
            kept = store.load(index, deals, players, seating)
            if kept is not None:
                parts[index], names = kept
    missing = [index for index, part in enumerate(parts) if part is None]
    started = time.perf_counter()
    done = sum(part.num_games for part in parts if part is not None)
    if store is not None and done and progress is not False:
        print(f"resuming: {len(chunks) - len(missing)} of {len(chunks)} chunks ({done} games) "
              f"read from {store.directory}", file=sys.stderr, flush=True)
    if missing:
        first_wave = sum(len(chunks[index]) for index in missing[:limit]) * group
        with progress_bar(num_deals * group, progress, initial=done,
                          in_flight=first_wave) as bar:
            for index, records, names in _play_chunks(
                specs, rules, seed, chunks, missing, limit, max_batch, seating
            ):
                parts[index] = records
                bar.update(records.num_games)
                if store is not None:
                    store.save(index, records, names,
                               earlier_s + time.perf_counter() - started)
    return GameRecords.concatenate(parts), names, earlier_s + time.perf_counter() - started


def _play_chunks(
    specs: Sequence[str],
    rules: SkyjoRules,
    seed: int,
    chunks: list[range],
    indices: list[int],
    limit: int,
    max_batch: int,
    seating: str,
) -> Iterator[tuple[int, GameRecords, list[str]]]:
    """Play chunks ``indices`` as Ray tasks, at most ``limit`` at once; yield each
    ``(index, records, names)`` as it finishes (in any order). Tasks still running when
    the caller stops (an error, Ctrl-C) are cancelled."""
    ray = import_ray()
    task = ray.remote(num_cpus=1)(_chunk_task)
    rules_data = rules.to_dict()
    queue = list(indices)
    pending: dict[Any, int] = {}  # task -> chunk index
    try:
        while queue or pending:
            while queue and len(pending) < limit:
                index = queue.pop(0)
                ref = task.remote(list(specs), rules_data, seed, index, chunks[index], max_batch,
                                  seating)
                pending[ref] = index
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                index = pending.pop(ref)
                records, names = _result(ray, ref)
                yield index, records, names
    finally:
        for ref in pending:  # after an error or Ctrl-C: stop what is still running
            ray.cancel(ref)


def evaluate_agents_distributed(
    specs: Sequence[str],
    rules: SkyjoRules,
    games: int,
    seed: int,
    *,
    workers: int | None = None,
    address: str | None = None,
    chunk_deals: int | None = None,
    progress: bool | None = None,
    ratings: bool = True,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
    resume: str | Path | None = None,
    seating: str = "cyclic",
) -> TournamentResult:
    """`evaluate_agents` sharded over Ray: the same report for deterministic agents, and
    the same report whatever ``workers`` for every agent (see the module docstring).

    Args:
        specs: One spec per seat position.
        rules: The rules; ``num_players`` is set to ``len(specs)``.
        games: Games wanted (>= 1).
        seed: Master seed.
        workers: Without ``address``, the CPUs of the local Ray started here (None: all);
            in any case the most chunks running at once.
        address: ``HOST:PORT`` of an existing Ray cluster (None: a local Ray). Unused when
            Ray is already initialised in this process.
        chunk_deals: Deal groups per task (None: `default_chunk_deals`).
        progress: Progress bar; None = only on a terminal.
        ratings: Compute OpenSkill ratings.
        connect_timeout_s: How long ``address`` may take to accept a connection.
        resume: A directory that keeps every finished chunk (`agents.evaluation.resume`):
            run again with the same arguments, only the chunks not kept there are played
            (no Ray is started when none is missing), and the report is the one of a run
            never stopped.
        seating: ``cyclic`` or ``all`` (`agents.evaluation.games.seat_arrangements`).

    Returns:
        The `TournamentResult`; ``elapsed_s`` excludes starting or connecting to Ray (and
        with ``resume`` adds the wall time of the earlier runs).

    Raises:
        DistributedSetupError: Ray missing, cluster unreachable, bad ``workers`` or
            ``chunk_deals``. ValueError: other bad arguments. AgentActionError,
            AgentSpecError: an agent failed in a task. DistributedRunError: Ray lost a
            task. ResumeError: ``resume`` holds another tournament or a damaged chunk.
    """
    check_seed(seed)
    check_workers(workers)
    if chunk_deals is not None:
        check_chunk_deals(chunk_deals)
    rules = rules.replace(num_players=len(specs)) if rules.num_players != len(specs) else rules
    num_deals = deal_groups(games, rules.num_players, seating)
    if chunk_deals is None:
        chunk_deals = default_chunk_deals(num_deals)
    store = None
    if resume is not None:
        store = ChunkStore(resume, tournament_identity(specs, rules, games, seed, chunk_deals,
                                                       seating))
    complete = store is not None and store.has_all(len(chunk_ranges(num_deals, chunk_deals)))
    session = nullcontext() if complete else ray_session(
        workers, address, connect_timeout_s=connect_timeout_s
    )
    with session:
        records, names, elapsed = play_sharded(
            specs,
            rules,
            games,
            seed,
            workers=workers,
            chunk_deals=chunk_deals,
            progress=progress,
            store=store,
            seating=seating,
        )
    return tournament_result(records, rules, games, seed, names, list(specs),
                             elapsed_s=elapsed, ratings=ratings, seating=seating)
