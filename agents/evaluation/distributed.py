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
* **Ray on demand.** Ray is imported only when `agents.parallel.ray_session` or a
  tournament here runs, never when this module is imported; the single-process path
  never imports it. The chunks run through `agents.parallel.run_chunks`, the one task
  loop of the project.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from contextlib import nullcontext
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from agents.evaluation.games import (
    DEFAULT_MAX_BATCH,
    GameRecords,
    check_seed,
    chunk_ranges,
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
from agents.parallel import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DistributedSetupError,
    check_workers,
    ray_session,
    run_chunks,
)
from skyjo_env.core.rules import SkyjoRules

#: Deal groups per chunk (one Ray task): 512 games of 2 players, large enough for the
#: batched engine to run near full speed, small enough to spread over a few workers.
DEFAULT_CHUNK_DEALS = 256

#: Fewest chunks a tournament is cut into by default (a deal group per chunk at least):
#: a small tournament of a slow search agent would otherwise be one chunk of 256 deal
#: groups, played by one worker however many there are.
MIN_CHUNKS = 16

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


def _chunk_task(specs, rules_data, seed, chunks, max_batch, seating, chunk):
    """The body of one Ray task (one CPU, one torch thread): chunk ``chunk`` of ``chunks``."""
    return play_chunk(specs, rules_data, seed, chunk, chunks[chunk], max_batch=max_batch,
                      torch_threads=1, seating=seating)


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
    """Play a tournament's games as Ray tasks, one per chunk of deal groups
    (`agents.parallel.run_chunks`; a Ray initialised before, e.g. by `ray_session`, is
    used, else one is started for the call, unless ``store`` keeps every chunk already).

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
    workers = check_workers(workers)
    limit = workers or len(chunks)
    parts: list[GameRecords | None] = [None] * len(chunks)
    names: list[str] = []
    earlier_s = 0.0
    if store is not None:
        earlier_s = store.elapsed_s
        for index, deals in enumerate(chunks):
            kept = store.load(index, deals, players, seating)
            if kept is not None:
                parts[index], names = kept
        for note in store.notes:  # e.g. a directory from before checksums, read fine
            print(note, file=sys.stderr, flush=True)
    missing = [index for index, part in enumerate(parts) if part is None]
    started = time.perf_counter()
    done = sum(part.num_games for part in parts if part is not None)
    if store is not None and done and progress is not False:
        print(f"resuming: {len(chunks) - len(missing)} of {len(chunks)} chunks ({done} games) "
              f"read from {store.directory}", file=sys.stderr, flush=True)
    if missing:
        first_wave = sum(len(chunks[index]) for index in missing[:limit]) * group
        task = partial(_chunk_task, list(specs), rules.to_dict(), seed, chunks, max_batch,
                       seating)
        with progress_bar(num_deals * group, progress, initial=done,
                          in_flight=first_wave) as bar:

            def chunk_done(index: int, played: tuple[GameRecords, list[str]]) -> None:
                records, chunk_names = played
                bar.update(records.num_games)
                if store is not None:
                    store.save(index, records, chunk_names,
                               earlier_s + time.perf_counter() - started)

            results = run_chunks(task, missing, workers, on_result=chunk_done)
        for index, (records, _) in zip(missing, results, strict=True):
            parts[index] = records
        names = results[-1][1]  # every chunk names the agents alike
    return GameRecords.concatenate(parts), names, earlier_s + time.perf_counter() - started


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
        workers, address, connect_timeout_s=connect_timeout_s, purpose="distributed evaluation"
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


__all__ = [
    "DEFAULT_CHUNK_DEALS",
    "MIN_CHUNKS",
    "check_chunk_deals",
    "chunk_ranges",
    "default_chunk_deals",
    "evaluate_agents_distributed",
    "play_chunk",
    "play_sharded",
]
