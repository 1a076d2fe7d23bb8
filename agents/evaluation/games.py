"""Full games between agents in one batched engine state (the play loop of a tournament).

Design:

* **Duplicated deals with seat rotation.** Games come in *deal groups*. Every game of a
  group starts from the same deal seed (so the same cards are dealt) and the ``P`` games
  of a group are the ``P`` cyclic rotations of the agents over the seats: in rotation
  ``r`` agent ``i`` sits at seat ``(i + r) % P``. Every agent thus plays every seat of
  every deal, and the luck of the deal largely cancels. The number of games is rounded up
  to whole deal groups. Cyclic rotations keep the agents' cyclic order, so with three or
  more agents each one always plays right after the same neighbour; in Skyjo that matters
  (the discard pile you draw from is your predecessor's). ``seating="all"`` plays every
  deal in all ``P!`` seatings instead (`seat_arrangements`; up to
  `MAX_ALL_SEATING_PLAYERS` seats): every agent then follows every other equally often.
* **One batched state.** All running games live in one `BatchState`; each decision step,
  every agent acts once for all the games where it holds the acting seat, then all games
  step at once. A finished game's slot is restarted with the next game until all are
  dispatched.
* **Reproducible.** The deal seeds come from ``SeedSequence(seed, spawn_key=(0,))`` and the
  agents' seeds (see `agent_seed`) from ``SeedSequence(seed, spawn_key=(1, i))``, so one
  master seed fixes the whole report; ratings are fed in game order, not completion order.
  A sharded tournament (`agents.evaluation.distributed`) plays fixed ranges of deal groups
  (`play_deals`) with agents seeded from ``SeedSequence(seed, spawn_key=(2, chunk, i))``
  (see `shard_agent_seed`) and merges the records (`GameRecords.concatenate`).
* **Win-rate interval.** A game's win share is 1 for a sole winner and 1/k for each of k
  tied winners. The 95% interval of an agent's win rate is a Student-t interval over
  *per-deal-group means* (the agent's mean win share over the games of one deal group),
  which are independent across deals and already have the deal luck averaged out. When
  that spread cannot be estimated (a single deal group, or every deal group with the same
  mean, e.g. an agent that wins every game) the interval falls back to the Wilson score
  interval with one trial per deal group, which is conservative because a per-deal mean in
  [0, 1] varies no more than a single Bernoulli trial.
* **Truncated games have no winner.** A game stopped by the turn cap
  (``rules.max_turns_per_round``) was never decided: every agent's win share in it is 0,
  so it counts in the win-rate denominators as a game nobody won (the agents' win rates
  then sum to the fraction of decided games), and the ratings skip it.
* **Bounded memory.** The per-game records take `record_bytes_per_game` bytes a game;
  more games than `max_games` (records over `MAX_RECORDS_BYTES`) are refused up front.
"""

from __future__ import annotations

import itertools
import math
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from skyjo_env.core import layout
from skyjo_env.core.engine import (
    illegal_action_message,
    legal_action_mask,
    new_batch,
    reset,
    step,
)
from skyjo_env.core.errors import one_line
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationEncoder
from skyjo_env.protocol import Agent

#: Largest number of games stepped together; more games reuse finished slots.
DEFAULT_MAX_BATCH = 8192

#: Most memory the per-game records of one tournament may take (1 GiB); a tournament that
#: would need more is refused before the first game (the statistics roughly double it).
MAX_RECORDS_BYTES = 2**30

# a deal seed is kept as a Python int in a list until its games start
_DEAL_SEED_BYTES = 48

#: How the agents sit over the games of one deal group: ``cyclic`` (``P`` rotations) or
#: ``all`` (all ``P!`` orders).
SEATINGS = ("cyclic", "all")
#: How reports name the games of a deal group under each seating.
SEATING_WORDS = {"cyclic": "rotations", "all": "orders"}
#: ``seating="all"`` plays ``P!`` games per deal group: 720 at 6 seats, 5,040 at 7.
MAX_ALL_SEATING_PLAYERS = 6


def check_seating(seating: Any, num_players: int) -> str:
    """``seating`` after checking it is one of `SEATINGS` and, for ``all``, that the
    ``num_players!`` games a deal stay within `MAX_ALL_SEATING_PLAYERS` seats."""
    if seating not in SEATINGS:
        raise ValueError(f"seating must be one of {', '.join(map(repr, SEATINGS))}, "
                         f"got {seating!r}")
    if seating == "all" and num_players > MAX_ALL_SEATING_PLAYERS:
        raise ValueError(
            f"seating='all' plays {num_players}! games per deal: at most "
            f"{MAX_ALL_SEATING_PLAYERS} agents (use the cyclic seating)"
        )
    return seating


def seat_arrangements(num_players: int, seating: str = "cyclic") -> np.ndarray:
    """Where every agent sits in each game of a deal group.

    Args:
        num_players: Agents (and seats) ``P``.
        seating: ``cyclic``: arrangement ``r`` seats agent ``i`` at ``(i + r) % P``;
            ``all``: the ``P!`` permutations in lexicographic order (arrangement 0 is the
            identity in both).

    Returns:
        int64 (R, P): ``[r, i]`` is agent ``i``'s seat in arrangement ``r`` (R = P or P!).
    """
    check_seating(seating, num_players)
    if seating == "all":
        return np.array(list(itertools.permutations(range(num_players))), np.int64)
    agents = np.arange(num_players, dtype=np.int64)
    return (agents[None, :] + agents[:, None]) % num_players


def games_per_deal(num_players: int, seating: str = "cyclic") -> int:
    """Games of one deal group: ``P`` (cyclic seating) or ``P!`` (all seatings)."""
    check_seating(seating, num_players)
    return math.factorial(num_players) if seating == "all" else num_players


def deal_groups(games: Any, num_players: int, seating: str = "cyclic") -> int:
    """Deal groups a tournament of ``games`` games plays: ``games`` checked by
    `check_games`, rounded up to whole groups of `games_per_deal` games."""
    return -(-check_games(games, num_players, seating) // games_per_deal(num_players, seating))


def rounding_note(asked: int, played: int) -> str:
    """``" (asked 4000, rounded up to whole deal groups)"`` when ``played`` games differ from
    the ``asked`` ones, else ``""``: the words a report puts after its game count."""
    return f" (asked {asked}, rounded up to whole deal groups)" if played != asked else ""


def chunk_ranges(num_deals: int, chunk_deals: int) -> list[range]:
    """The deal groups of each chunk: ``range(0, c), range(c, 2c), ...`` up to ``num_deals``."""
    return [
        range(start, min(start + chunk_deals, num_deals))
        for start in range(0, num_deals, chunk_deals)
    ]


class AgentActionError(ValueError):
    """An agent's ``act`` raised, or returned a malformed or illegal action; the message
    names the agent."""


class TooManyGamesError(ValueError):
    """More games than the records may hold (see `max_games`)."""


def deal_seeds(seed: int, num_deals: int) -> list[int]:
    """The deal seed of each deal group (prefix-stable: more deals extend the list).

    Args:
        seed: The master seed, a non-negative int.
        num_deals: Number of deal groups.

    Returns:
        ``num_deals`` non-negative ints for `skyjo_env.core.engine.reset`.
    """
    sequence = np.random.SeedSequence(check_seed(seed), spawn_key=(0,))
    return [int(s) for s in sequence.generate_state(num_deals, np.uint64)]


def set_torch_threads(threads: int) -> None:
    """Limit torch to ``threads`` intra-op threads if an agent (a ``ppo:`` one) loaded it.

    Networks this small gain nothing from more threads, and two threads on two busy cores
    slow down manyfold; torch itself is never imported here.
    """
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def agent_seed(seed: int, index: int) -> int:
    """Seed of the generator of the agent at position ``index``, from the master seed."""
    sequence = np.random.SeedSequence(check_seed(seed), spawn_key=(1, int(index)))
    return int(sequence.generate_state(1, np.uint64)[0])


def shard_agent_seed(seed: int, chunk: int, index: int) -> int:
    """Seed of agent ``index``'s generator in chunk ``chunk`` of a sharded tournament.

    Each chunk of deal groups builds its agents afresh, so an agent with its own
    randomness makes the same choices in a chunk whichever worker plays it.
    """
    sequence = np.random.SeedSequence(check_seed(seed), spawn_key=(2, int(chunk), int(index)))
    return int(sequence.generate_state(1, np.uint64)[0])


def check_seed(seed: Any) -> int:
    """``seed`` as an int; raises ValueError unless it is a non-negative int."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return int(seed)


def display_names(names: Sequence[str]) -> list[str]:
    """Names made unique by numbering repeats in order: ``[ev, ev, greedy] -> [ev#1, ev#2, greedy]``."""
    counts = Counter(names)
    seen: Counter[str] = Counter()
    out = []
    for name in names:
        if counts[name] > 1:
            seen[name] += 1
            out.append(f"{name}#{seen[name]}")
        else:
            out.append(name)
    return out


@dataclass
class GameRecords:
    """Per-game outcomes, indexed by game and by *agent position* (not seat).

    Game ``g`` is seat arrangement ``g % R`` of deal group ``first_deal + g // R``
    (`seat_arrangements`: R = P rotations, or P! orders with ``seating="all"``;
    ``first_deal`` is 0 for a whole tournament, the chunk's first deal group for a shard).

    Attributes:
        deal: int64 (G,), deal group of each game.
        rotation: int64 (G,), the seat arrangement ``r``; with the cyclic seating agent
            ``i`` sat at seat ``(i + r) % P``.
        seat: int64 (G, P), seat of each agent.
        total: int64 (G, P), final total score of each agent.
        win_share: float64 (G, P), 1/k for each of the k lowest totals, else 0; all 0 in a
            truncated game (it has no winner).
        rounds: int64 (G,), rounds completed (scored) in the game.
        rounds_finished: int64 (G, P), rounds the agent ended.
        times_penalised: int64 (G, P), rounds in which the agent was penalised as finisher.
        lines_eliminated: int64 (G, P), columns and rows the agent eliminated.
        truncated: bool (G,), games ended by the turn cap rather than by the score.
        decisions: int64 (G,), decisions taken in the game (all seats).
    """

    deal: np.ndarray
    rotation: np.ndarray
    seat: np.ndarray
    total: np.ndarray
    win_share: np.ndarray
    rounds: np.ndarray
    rounds_finished: np.ndarray
    times_penalised: np.ndarray
    lines_eliminated: np.ndarray
    truncated: np.ndarray
    decisions: np.ndarray

    @classmethod
    def empty(cls, num_games: int, num_players: int, first_deal: int = 0,
              seating: str = "cyclic") -> GameRecords:
        """Zeroed records for ``num_games`` games of ``num_players`` agents whose deal groups
        start at ``first_deal``, seated by ``seating`` (`seat_arrangements`)."""
        arrangements = seat_arrangements(num_players, seating)
        games = np.arange(num_games, dtype=np.int64)
        rotation = games % len(arrangements)
        by_agent = (num_games, num_players)
        return cls(
            deal=first_deal + games // len(arrangements),
            rotation=rotation,
            seat=arrangements[rotation],
            total=np.zeros(by_agent, np.int64),
            win_share=np.zeros(by_agent, np.float64),
            rounds=np.zeros(num_games, np.int64),
            rounds_finished=np.zeros(by_agent, np.int64),
            times_penalised=np.zeros(by_agent, np.int64),
            lines_eliminated=np.zeros(by_agent, np.int64),
            truncated=np.zeros(num_games, bool),
            decisions=np.zeros(num_games, np.int64),
        )

    @classmethod
    def concatenate(cls, parts: Sequence[GameRecords]) -> GameRecords:
        """The records of ``parts`` one after the other, as one `GameRecords`.

        Args:
            parts: Records of consecutive ranges of deal groups, in deal order (e.g. the
                chunks of a sharded tournament sorted by their first deal).

        Raises:
            ValueError: No parts, parts with different numbers of agents, or parts whose
                deal groups do not follow on from each other.
        """
        if not parts:
            raise ValueError("no records to concatenate")
        players = {part.total.shape[1] for part in parts}
        if len(players) > 1:
            raise ValueError(f"records of different numbers of agents: {sorted(players)}")
        expected = int(parts[0].deal[0]) if parts[0].num_games else 0
        for part in parts:
            if part.num_games and int(part.deal[0]) != expected:
                raise ValueError(
                    f"records out of deal order: a part starts at deal group "
                    f"{int(part.deal[0])}, expected {expected}"
                )
            if part.num_games:
                expected = int(part.deal[-1]) + 1
        return cls(
            **{
                field.name: np.concatenate([getattr(part, field.name) for part in parts])
                for field in fields(cls)
            }
        )

    @property
    def num_games(self) -> int:
        """Number of games ``G``."""
        return self.deal.shape[0]

    @property
    def games_per_deal(self) -> int:
        """Games ``R`` of each deal group (every group is whole: P or P! games)."""
        return int(np.count_nonzero(self.deal == self.deal[0])) if self.num_games else 1


def record_bytes_per_game(num_players: int) -> int:
    """Bytes of `GameRecords` (and deal seeds) one game of ``num_players`` agents takes."""
    sample = GameRecords.empty(num_players, num_players)
    records = sum(getattr(sample, field.name).nbytes for field in fields(GameRecords))
    return -(-(records + _DEAL_SEED_BYTES) // num_players)


def max_games(num_players: int, seating: str = "cyclic") -> int:
    """Most games one tournament of ``num_players`` agents may play (whole deal groups)
    so that its records stay within `MAX_RECORDS_BYTES`."""
    games = MAX_RECORDS_BYTES // record_bytes_per_game(num_players)
    return games - games % games_per_deal(num_players, seating)


def check_games(games: Any, num_players: int, seating: str = "cyclic") -> int:
    """``games`` as an int after checking it is an int in ``1..max_games(num_players,
    seating)``.

    Raises:
        ValueError: Not an int >= 1. TooManyGamesError: more than `max_games`.
    """
    if not isinstance(games, (int, np.integer)) or isinstance(games, bool) or games < 1:
        raise ValueError(f"games must be an int >= 1, got {games!r}")
    limit = max_games(num_players, seating)
    if games > limit:
        raise TooManyGamesError(
            f"games={games} is too many: their records would need about "
            f"{games * record_bytes_per_game(num_players) / 2**30:.3g} GiB; at most {limit} "
            f"games for {num_players} agents (records capped at "
            f"{MAX_RECORDS_BYTES / 2**30:g} GiB; run several seeds instead)"
        )
    return int(games)


def agent_label(name: str, spec: str | None = None) -> str:
    """How messages name an agent: ``'ev'``, or ``'ppo' (spec 'ppo:m.zip')`` when the spec
    says more than the name."""
    return repr(name) if spec is None or spec == name else f"{name!r} (spec {spec!r})"


#: Seconds between the progress lines written when stderr is not a terminal.
PROGRESS_LINE_INTERVAL_S = 60.0


class ProgressLines:
    """Progress for a log file (``nohup``, CI): a plain line on ``stream`` at most every
    ``interval_s`` seconds, e.g. ``games: 250/2000 (12%), 612 s, about 4284 s left``.

    A run shorter than the interval prints nothing. Same interface as the tqdm bar that
    replaces it on a terminal (``update``, a context manager).

    Args:
        total: Games to play.
        interval_s: Least seconds between two lines.
        stream: Where lines go (stderr when None).
        clock: Seconds, monotonic (`time.monotonic`; tests pass their own).
        initial: Games finished before this run (a resumed tournament): counted as done,
            not in the rate that estimates the time left.
        in_flight: Games played at once in parallel chunks (workers x chunk size; 0 when
            chunks run one after another). Chunks started together end together, so until
            that many games are done the first finished chunk stands for all of them in
            the rate; otherwise the first line's time left would be W times too long.
        unit: What is counted, the lines' first word (``games``; ``decisions``).
    """

    def __init__(self, total: int, interval_s: float = PROGRESS_LINE_INTERVAL_S,
                 stream=None, clock=time.monotonic, initial: int = 0, in_flight: int = 0,
                 unit: str = "games"):
        self.unit = unit
        self.total, self.done = int(total), int(initial)
        self.initial = int(initial)
        self.in_flight = min(int(in_flight), self.total - self.initial)
        self.interval_s = float(interval_s)
        self.stream = stream
        self.clock = clock
        self.started = self.last_line = clock()

    def update(self, games: int) -> None:
        """Count ``games`` more finished games; write a line if the interval has passed."""
        self.done += int(games)
        now = self.clock()
        if now - self.last_line < self.interval_s:
            return
        self.last_line = now
        elapsed = now - self.started
        played = self.done - self.initial  # in this run: the rate excludes resumed games
        if played:
            counted = max(played, self.in_flight)
            left = elapsed * max(self.total - self.initial - counted, 0) / counted
        else:
            left = float("nan")
        share = 100 * self.done / self.total if self.total else 100.0
        print(f"{self.unit}: {self.done}/{self.total} ({share:.0f}%), {elapsed:.0f} s, "
              f"about {left:.0f} s left", file=self.stream or sys.stderr, flush=True)

    def __enter__(self) -> ProgressLines:
        return self

    def __exit__(self, *exc_info) -> None:
        return None


def progress_bar(total: int, progress: bool | None, initial: int = 0, in_flight: int = 0,
                 unit: str = "games"):
    """Progress over ``total`` games (or other ``unit``s), ``initial`` of them already
    played and ``in_flight`` played at once in parallel chunks (see `ProgressLines`): a
    tqdm bar on a terminal (or with ``progress`` True), `ProgressLines` when ``progress``
    is None and stderr is not a terminal, nothing when ``progress`` is False."""
    from tqdm.auto import tqdm

    if progress is None and not sys.stderr.isatty():
        return ProgressLines(total, initial=initial, in_flight=in_flight, unit=unit)
    return tqdm(total=total, initial=initial, unit=unit.rstrip("s"), desc=unit,
                disable=progress is False, leave=False)


def act_checked(
    agent: Agent,
    label: str,
    observations: np.ndarray,
    masks: np.ndarray,
    rows: np.ndarray,
    state,
    slot_game: np.ndarray | None = None,
) -> np.ndarray:
    """Ask ``agent`` for its actions in ``rows`` of the batch and check them.

    Args:
        agent: The agent holding the acting seat in those rows.
        label: The agent in messages (see `agent_label`).
        observations: float32 (B, O), every batch row's observation.
        masks: bool (B, A), every batch row's legal actions.
        rows: int64 (n,), the batch rows to act in.
        state: The `BatchState` (for the reason an action is illegal).
        slot_game: int64 (B,), the tournament game in each batch row, or None.

    Returns:
        int64 (n,), the agent's legal actions.

    Raises:
        AgentActionError: ``act`` raised (any exception; KeyboardInterrupt passes through)
            or returned actions of the wrong shape or dtype, or an illegal action.
    """
    try:
        chosen = agent.act(observations[rows], masks[rows])
    except Exception as error:  # the agent's own bug, reported with its name
        raise AgentActionError(
            f"agent {label} failed in act(): {one_line(error)}"
        ) from error
    return _check_actions(chosen, rows, masks, label, state, slot_game)


def _check_actions(
    actions: Any,
    rows: np.ndarray,
    masks: np.ndarray,
    label: str,
    state,
    slot_game: np.ndarray | None,
) -> np.ndarray:
    """Validate one agent's answer for ``rows`` of the batch; int64 (len(rows),)."""
    try:
        array = np.asarray(actions)
    except Exception as error:  # e.g. a ragged list
        raise AgentActionError(
            f"agent {label} returned actions that are not an array: {error}"
        ) from error
    if array.shape != rows.shape:
        raise AgentActionError(
            f"agent {label} returned actions of shape {array.shape} for {rows.size} games; "
            f"expected ({rows.size},)"
        )
    if not np.issubdtype(array.dtype, np.integer):
        raise AgentActionError(f"agent {label} returned actions of dtype {array.dtype}, not ints")
    array = array.astype(np.int64, copy=False)
    num_actions = masks.shape[1]
    in_range = (array >= 0) & (array < num_actions)
    legal = in_range.copy()
    legal[in_range] = masks[rows[in_range], array[in_range]]
    if not legal.all():
        k = int(np.flatnonzero(~legal)[0])
        row = int(rows[k])
        detail = illegal_action_message(state, row, int(array[k]))
        where = "" if slot_game is None else f" in tournament game {int(slot_game[row])}"
        raise AgentActionError(f"agent {label} chose an illegal action{where}: {detail}")
    return array


def play_games(
    agents: Sequence[Agent],
    rules: SkyjoRules,
    games: int,
    seed: int,
    *,
    names: Sequence[str] | None = None,
    specs: Sequence[str] | None = None,
    progress: bool | None = None,
    max_batch: int = DEFAULT_MAX_BATCH,
    seating: str = "cyclic",
    recorder=None,
) -> tuple[GameRecords, float]:
    """Play the games of a tournament and record their outcomes (no statistics).

    Args:
        agents: One agent per seat position, ``len(agents) == rules.num_players``.
        rules: The rules (``num_players`` must equal the number of agents).
        games: Games wanted, 1 to `max_games` (``num_players``, ``seating``); rounded up
            to whole deal groups (`games_per_deal`).
        seed: Master seed of the deals (non-negative int).
        names: Names used in error messages (default: the agents' names).
        specs: Specs shown beside the names in error messages (default: none).
        progress: Show a progress bar; None shows one only when stderr is a terminal.
        max_batch: Most games stepped together.
        seating: ``cyclic`` or ``all`` (`seat_arrangements`).
        recorder: Optional `agents.evaluation.replays.ReplayRecorder`, given every step.

    Returns:
        ``(records, elapsed_s)``.

    Raises:
        ValueError: Bad arguments (`TooManyGamesError` for too many games).
        AgentActionError: an agent's ``act`` raised or returned an illegal or malformed
            action.
    """
    players = rules.num_players
    if len(agents) != players:
        raise ValueError(f"{len(agents)} agents for {players} seats; give one agent per seat")
    num_deals = deal_groups(games, players, seating)
    return play_deals(
        agents,
        rules,
        seed,
        range(num_deals),
        names=names,
        specs=specs,
        progress=progress,
        max_batch=max_batch,
        seating=seating,
        recorder=recorder,
    )


def check_deals(deals: Any, num_players: int, seating: str = "cyclic") -> range:
    """``deals`` after checking it is a non-empty ``range`` of deal groups with step 1,
    starting at >= 0, whose games fit in `max_games` (``num_players``, ``seating``)."""
    if not isinstance(deals, range) or deals.step != 1 or deals.start < 0 or not deals:
        raise ValueError(
            f"deals must be a non-empty range(start, stop) with 0 <= start < stop, got {deals!r}"
        )
    check_games(len(deals) * games_per_deal(num_players, seating), num_players, seating)
    return deals


def play_deals(
    agents: Sequence[Agent],
    rules: SkyjoRules,
    seed: int,
    deals: range,
    *,
    names: Sequence[str] | None = None,
    specs: Sequence[str] | None = None,
    progress: bool | None = None,
    max_batch: int = DEFAULT_MAX_BATCH,
    seating: str = "cyclic",
    recorder=None,
) -> tuple[GameRecords, float]:
    """Play every seat arrangement of the deal groups ``deals`` of a tournament (no
    statistics).

    `play_games` plays ``range(num_deals)``; a sharded tournament plays one chunk of deal
    groups per call. Deal group ``d`` is dealt from ``deal_seeds(seed, d + 1)[d]`` whatever
    the range, and messages name the game by its number in the whole tournament.

    Args:
        agents: One agent per seat position, ``len(agents) == rules.num_players``.
        rules: The rules (``num_players`` must equal the number of agents).
        seed: Master seed of the deals (non-negative int).
        deals: The deal groups to play, ``range(start, stop)`` with ``0 <= start < stop``.
        names: Names used in error messages (default: the agents' names).
        specs: Specs shown beside the names in error messages (default: none).
        progress: Show a progress bar; None shows one only when stderr is a terminal.
        max_batch: Most games stepped together.
        seating: ``cyclic`` or ``all`` (`seat_arrangements`).
        recorder: Optional `agents.evaluation.replays.ReplayRecorder`: called after every
            step (before finished games restart) to log the moves of chosen games.

    Returns:
        ``(records, elapsed_s)``: records of the ``len(deals) * R`` games in deal order
        (``records.deal`` holds the deal group numbers of the whole tournament).

    Raises:
        ValueError: Bad arguments (`TooManyGamesError` for too many games).
        AgentActionError: an agent's ``act`` raised or returned an illegal or malformed
            action.
    """
    players = rules.num_players
    if len(agents) != players:
        raise ValueError(f"{len(agents)} agents for {players} seats; give one agent per seat")
    deals = check_deals(deals, players, seating)
    if not isinstance(max_batch, (int, np.integer)) or max_batch < 1:
        raise ValueError(f"max_batch must be an int >= 1, got {max_batch!r}")
    names = list(names) if names is not None else display_names([a.name for a in agents])
    if specs is not None and len(specs) != players:
        raise ValueError(f"{len(specs)} specs for {players} agents")
    labels = [
        agent_label(name, None if specs is None else specs[i]) for i, name in enumerate(names)
    ]
    arrangements = seat_arrangements(players, seating)
    group = len(arrangements)
    num_games = len(deals) * group
    first_game = deals.start * group  # number of this range's first game in the tournament
    seeds = deal_seeds(seed, deals.stop)[deals.start :]
    records = GameRecords.empty(num_games, players, first_deal=deals.start, seating=seating)
    # agent position holding each seat in each arrangement (the inverse permutations)
    owners = np.argsort(arrangements, axis=1)

    batch = min(num_games, int(max_batch))
    state = new_batch(rules, batch)
    encoder = ObservationEncoder(rules)
    observations = np.empty((batch, encoder.size), np.float32)
    masks = np.empty((batch, state.num_actions), bool)
    actions = np.empty(batch, np.int64)
    events = np.empty(batch, np.int32)
    # tournament game running in each slot, -1 when idle
    slot_game = np.full(batch, -1, np.int64)
    # agent position holding each seat of each slot's game, -1 for idle slots
    seat_owner = np.full((batch, players), -1, np.int64)
    all_slots = np.arange(batch)
    next_game = 0

    def start(slots: np.ndarray) -> None:
        nonlocal next_game
        count = min(slots.size, num_games - next_game)
        idle = slots[count:]
        slot_game[idle] = -1
        seat_owner[idle] = -1
        if count == 0:
            return
        slots = slots[:count]
        ids = np.arange(next_game, next_game + count)
        next_game += count
        reset(state, [seeds[g // group] for g in ids], which=slots)
        slot_game[slots] = first_game + ids
        seat_owner[slots] = owners[ids % group]

    started = time.perf_counter()
    start(all_slots)
    finished = 0
    with progress_bar(num_games, progress) as bar:
        while finished < num_games:
            legal_action_mask(state, out=masks)
            encoder.encode(state, state.current_player, out=observations)
            owner = seat_owner[all_slots, state.current_player]
            actions.fill(-1)
            for index, agent in enumerate(agents):
                rows = np.flatnonzero(owner == index)
                if rows.size == 0:
                    continue
                actions[rows] = act_checked(
                    agent, labels[index], observations, masks, rows, state, slot_game
                )
            step(state, actions, events)
            if recorder is not None:
                recorder.record(slot_game, actions, events, state)
            done = np.flatnonzero(events & layout.EVENT_GAME_ENDED)
            if done.size == 0:
                continue
            _record(records, state, done, slot_game[done] - first_game)
            finished += done.size
            bar.update(done.size)
            start(done)
    return records, time.perf_counter() - started


def _record(records: GameRecords, state, slots: np.ndarray, ids: np.ndarray) -> None:
    """Copy the outcomes of finished games (batch ``slots``) into ``records[ids]``."""
    seat_of = records.seat[ids]  # (n, P): seat of each agent
    seat_fields = state.seat[slots]  # (n, P seats, F)

    def by_agent(column: int) -> np.ndarray:
        return np.take_along_axis(seat_fields[:, :, column], seat_of, axis=1).astype(np.int64)

    totals = by_agent(layout.TOTAL)
    records.total[ids] = totals
    is_winner = totals == totals.min(axis=1, keepdims=True)
    # a game stopped by the turn cap was never decided: nobody wins it
    is_winner &= ~state.truncated[slots][:, None]
    records.win_share[ids] = is_winner / np.maximum(is_winner.sum(axis=1, keepdims=True), 1)
    records.rounds[ids] = state.game[slots, layout.ROUND]
    records.rounds_finished[ids] = by_agent(layout.ROUNDS_FINISHED)
    records.times_penalised[ids] = by_agent(layout.TIMES_PENALISED)
    records.lines_eliminated[ids] = by_agent(layout.LINES_ELIMINATED)
    records.truncated[ids] = state.truncated[slots]
    records.decisions[ids] = state.game[slots, layout.DECISIONS]
