"""Move logs of whole games (replays): written by ``evaluate.py --replays DIR``, watched in
``skyjo-web``.

A replay holds what it takes to play a game again on the engine, not the states: the
rules, the deal seed and every action in order. The engine is deterministic given a seed
and the actions, so `play_back` rebuilds any position of the game exactly. On disk it is
one JSON object per game:

==============  =========================================================================
key             content
==============  =========================================================================
``format``      ``"skyjo-replay"``
``version``     `REPLAY_VERSION`
``rules``       `SkyjoRules.to_dict` (the deck as a value -> count mapping)
``seed``        the deal seed given to `skyjo_env.core.reset`
``seats``       one ``{"name": ..., "spec": ...}`` per seat, seat 0 first
``actions``     every decision's action id, in order
``totals``      the final total of each seat (checked when the replay is played back)
``truncated``   whether the turn cap stopped the game
``source``      where the game came from, e.g. ``{"tournament_game": 12, "deal": 6,
                "rotation": 0, "master_seed": 0}`` (free-form, not checked)
==============  =========================================================================

`ReplayRecorder` collects the games of a tournament as they are played
(`agents.evaluation.games.play_deals` calls it after each batch step) and writes the
chosen ones: the first N games, or the first N that the first agent did not win.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.evaluation.games import deal_seeds, seat_arrangements
from skyjo_env.core import layout
from skyjo_env.core.engine import BatchState, IllegalActionError, new_batch, reset, step
from skyjo_env.core.rules import SkyjoRules

REPLAY_FORMAT = "skyjo-replay"
REPLAY_VERSION = 1
#: Most actions a replay may hold (an official game takes a few hundred).
MAX_REPLAY_ACTIONS = 200_000
#: Which games `ReplayRecorder` keeps: the first N, or the first N the first agent lost.
REPLAY_SELECTIONS = ("first", "lost")


class ReplayError(ValueError):
    """A replay that is malformed or does not play back; the message names the field."""


@dataclass(frozen=True)
class Replay:
    """One game's move log.

    Attributes:
        rules: The rules played.
        seed: The deal seed (non-negative int).
        seats: ``(name, spec)`` of each seat's agent, seat 0 first.
        actions: Every action id, in order.
        totals: Final total of each seat, or None when unknown.
        truncated: Whether the turn cap stopped the game.
        source: Where the game came from (free-form).
    """

    rules: SkyjoRules
    seed: int
    seats: tuple[tuple[str, str], ...]
    actions: tuple[int, ...]
    totals: tuple[int, ...] | None = None
    truncated: bool = False
    source: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The replay as a JSON-ready dict (see the module docstring)."""
        rules = self.rules.to_dict()
        rules["deck"] = {str(value): count for value, count in rules["deck"].items()}
        return {
            "format": REPLAY_FORMAT,
            "version": REPLAY_VERSION,
            "rules": rules,
            "seed": self.seed,
            "seats": [{"name": name, "spec": spec} for name, spec in self.seats],
            "actions": list(self.actions),
            "totals": None if self.totals is None else list(self.totals),
            "truncated": self.truncated,
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: Any) -> Replay:
        """Read a replay dict, checking every field (not the play-back: `play_back`).

        Raises:
            ReplayError: A missing or malformed field, named.
        """
        if not isinstance(data, dict):
            raise ReplayError(f"a replay must be a JSON object, got {type(data).__name__}")
        if data.get("format") != REPLAY_FORMAT:
            raise ReplayError(f"format must be {REPLAY_FORMAT!r}, got {data.get('format')!r}")
        if data.get("version") != REPLAY_VERSION:
            raise ReplayError(f"version must be {REPLAY_VERSION}, got {data.get('version')!r}")
        try:
            rules = SkyjoRules.from_dict(data.get("rules"))
        except (ValueError, TypeError) as error:
            raise ReplayError(f"rules: {error}") from None
        seed = data.get("seed")
        if not _is_int(seed) or seed < 0:
            raise ReplayError(f"seed must be a non-negative int, got {seed!r}")
        seats = _read_seats(data.get("seats"), rules.num_players)
        actions = data.get("actions")
        if not isinstance(actions, list) or len(actions) > MAX_REPLAY_ACTIONS:
            raise ReplayError(f"actions must be a list of at most {MAX_REPLAY_ACTIONS} ints")
        bad = next((i for i, a in enumerate(actions) if not _is_int(a)), None)
        if bad is not None:
            raise ReplayError(f"actions[{bad}] must be an int, got {actions[bad]!r}")
        totals = data.get("totals")
        if totals is not None and (not isinstance(totals, list)
                                   or len(totals) != rules.num_players
                                   or not all(_is_int(t) for t in totals)):
            raise ReplayError(f"totals must be null or {rules.num_players} ints, got {totals!r}")
        truncated = data.get("truncated", False)
        if not isinstance(truncated, bool):
            raise ReplayError(f"truncated must be true or false, got {truncated!r}")
        source = data.get("source", {})
        if not isinstance(source, dict):
            raise ReplayError(f"source must be an object, got {type(source).__name__}")
        return cls(rules, int(seed), seats, tuple(int(a) for a in actions),
                   None if totals is None else tuple(int(t) for t in totals), truncated, source)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _read_seats(seats: Any, players: int) -> tuple[tuple[str, str], ...]:
    if not isinstance(seats, list) or len(seats) != players:
        raise ReplayError(f"seats must list {players} seats (rules.num_players), got {seats!r}")
    out = []
    for index, seat in enumerate(seats):
        if not isinstance(seat, dict) or not all(
            isinstance(seat.get(key), str) and len(seat[key]) <= 500 for key in ("name", "spec")
        ):
            raise ReplayError(f"seats[{index}] must be {{'name': str, 'spec': str}}, got {seat!r}")
        out.append((seat["name"], seat["spec"]))
    return tuple(out)


def play_back(replay: Replay, moves: int | None = None) -> BatchState:
    """The game of ``replay`` after its first ``moves`` actions (all when None).

    Args:
        replay: The replay.
        moves: How many actions to apply, 0..len(actions).

    Returns:
        A `BatchState` of one game.

    Raises:
        ReplayError: ``moves`` out of range, an illegal action (named by its index), or a
            whole game that does not end where the log ends or with the logged totals.
    """
    count = len(replay.actions) if moves is None else moves
    if not 0 <= count <= len(replay.actions):
        raise ReplayError(f"moves must be in 0..{len(replay.actions)}, got {moves!r}")
    state = new_batch(replay.rules, 1)
    reset(state, [replay.seed])
    for index in range(count):
        if state.all_over:
            raise ReplayError(f"actions[{index}]: the game ended after {index} actions")
        try:
            step(state, np.array([replay.actions[index]], np.int64))
        except IllegalActionError as error:
            raise ReplayError(f"actions[{index}]: {error}") from None
    if moves is None:
        _check_ending(replay, state)
    return state


def _check_ending(replay: Replay, state: BatchState) -> None:
    if not state.all_over:
        raise ReplayError(f"actions: the game is not over after all {len(replay.actions)} "
                          "actions")
    totals = tuple(int(t) for t in state.seat[0, :, layout.TOTAL])
    if replay.totals is not None and totals != replay.totals:
        raise ReplayError(f"totals: the actions end with totals {list(totals)}, the log says "
                          f"{list(replay.totals)}")


def read_replay(path: str | Path) -> Replay:
    """Load and check a replay file (`Replay.from_json`, then `play_back`).

    Raises:
        ReplayError: Unreadable, not JSON, or not a valid replay.
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ReplayError(f"cannot read replay {str(path)!r}: {error}") from None
    replay = Replay.from_json(data)
    play_back(replay)
    return replay


class ReplayRecorder:
    """Keeps the move logs of chosen games of a tournament and writes them as replays.

    Pass it to `agents.evaluation.tournament.play_tournament` (``recorder=``); it is
    called after every batch step. It buffers the actions of the games being played
    (int16, grown as needed) and writes ``game-NNNNNN.json`` into ``directory`` when a
    chosen game ends.

    Args:
        directory: Where the replays go (made if missing).
        count: How many games to write (>= 1).
        select: ``first`` (the games numbered 0..count-1) or ``lost`` (the first
            ``count`` games to end that the first agent did not win outright or share).
        rules: The tournament's rules.
        seed: Its master seed.
        names: Display name of each agent position.
        specs: Spec of each agent position.
        seating: The tournament's seating (``cyclic`` or ``all``).
    """

    def __init__(self, directory: str | Path, count: int, select: str, rules: SkyjoRules,
                 seed: int, names: list[str], specs: list[str], seating: str = "cyclic"):
        if select not in REPLAY_SELECTIONS:
            raise ValueError(f"select must be one of {', '.join(REPLAY_SELECTIONS)}, "
                             f"got {select!r}")
        if not _is_int(count) or count < 1:
            raise ValueError(f"count must be an int >= 1, got {count!r}")
        self.directory = Path(directory)
        self.count = count
        self.select = select
        self.rules = rules
        self.seed = seed
        self.names = list(names)
        self.specs = list(specs)
        self.arrangements = seat_arrangements(rules.num_players, seating)
        self.written: list[Path] = []
        self._seeds: list[int] = []
        self._buffer = np.zeros((0, 0), np.int16)
        self._length = np.zeros(0, np.int64)

    @property
    def done(self) -> bool:
        """Whether ``count`` replays have been written."""
        return len(self.written) >= self.count

    def _wanted(self, games: np.ndarray) -> np.ndarray:
        """Which of the games being played may still be written: bool like ``games``."""
        if self.done:
            return np.zeros(games.shape, bool)
        if self.select == "first":
            return (games >= 0) & (games < self.count)
        return games >= 0

    def record(self, slot_game: np.ndarray, actions: np.ndarray, events: np.ndarray,
               state: BatchState) -> None:
        """Log one batch step, and write the chosen games that it ended.

        Args:
            slot_game: int64 (B,), the tournament game in each batch slot (-1 idle).
            actions: int64 (B,), the actions just applied (-1 where none).
            events: int32 (B,), the step's event bits.
            state: The batch after the step (ended games not yet restarted).
        """
        self._fit(slot_game.shape[0])
        wanted = self._wanted(slot_game)
        rows = np.flatnonzero(wanted & (actions >= 0))
        if rows.size:
            if int(self._length[rows].max()) >= self._buffer.shape[1]:
                self._grow()
            self._buffer[rows, self._length[rows]] = actions[rows]
            self._length[rows] += 1
        for slot in np.flatnonzero((events & layout.EVENT_GAME_ENDED) != 0):
            if wanted[slot]:
                self._finish(int(slot), int(slot_game[slot]), state)
            self._length[slot] = 0

    def _fit(self, batch: int) -> None:
        if self._length.shape[0] != batch:
            self._buffer = np.zeros((batch, 256), np.int16)
            self._length = np.zeros(batch, np.int64)

    def _grow(self) -> None:
        wider = np.zeros((self._buffer.shape[0], 2 * self._buffer.shape[1]), np.int16)
        wider[:, : self._buffer.shape[1]] = self._buffer
        self._buffer = wider

    def _deal_seed(self, deal: int) -> int:
        if deal >= len(self._seeds):
            self._seeds = deal_seeds(self.seed, max(deal + 1, 2 * len(self._seeds)))
        return self._seeds[deal]

    def _finish(self, slot: int, game: int, state: BatchState) -> None:
        group = len(self.arrangements)
        seat_of = self.arrangements[game % group]  # seat of each agent position
        totals = [int(t) for t in state.seat[slot, :, layout.TOTAL]]
        truncated = bool(state.truncated[slot])
        first_agent_total = totals[int(seat_of[0])]
        if self.select == "lost" and not truncated and first_agent_total == min(totals):
            return
        if self.done:
            return
        agent_at = np.argsort(seat_of)  # agent position of each seat
        replay = Replay(
            rules=self.rules,
            seed=self._deal_seed(game // group),
            seats=tuple((self.names[a], self.specs[a]) for a in agent_at),
            actions=tuple(int(a) for a in self._buffer[slot, : self._length[slot]]),
            totals=tuple(totals),
            truncated=truncated,
            source={"tournament_game": game, "deal": game // group,
                    "rotation": game % group, "master_seed": self.seed,
                    "first_agent_seat": int(seat_of[0])},
        )
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"game-{game:06d}.json"
        path.write_text(json.dumps(replay.to_json()))
        self.written.append(path)


__all__ = [
    "MAX_REPLAY_ACTIONS",
    "REPLAY_FORMAT",
    "REPLAY_SELECTIONS",
    "REPLAY_VERSION",
    "Replay",
    "ReplayError",
    "ReplayRecorder",
    "play_back",
    "read_replay",
]
