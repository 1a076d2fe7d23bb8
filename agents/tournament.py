"""Tournaments: many full games between agents in one batched engine state.

Design:

* **Duplicated deals with seat rotation.** Games come in *deal groups*. Every game of a
  group starts from the same deal seed (so the same cards are dealt) and the ``P`` games
  of a group are the ``P`` cyclic rotations of the agents over the seats: in rotation
  ``r`` agent ``i`` sits at seat ``(i + r) % P``. Every agent thus plays every seat of
  every deal, and the luck of the deal largely cancels. The number of games is rounded up
  to a multiple of ``P``. Cyclic rotations keep the agents' cyclic order, so with three or
  more agents each one always plays right after the same neighbour; in Skyjo that matters
  (the discard pile you draw from is your predecessor's), so compare agents with 3+ seats
  knowing who sits before whom.
* **One batched state.** All running games live in one `BatchState`; each decision step,
  every agent acts once for all the games where it holds the acting seat, then all games
  step at once. A finished game's slot is restarted with the next game until all are
  dispatched.
* **Reproducible.** The deal seeds come from ``SeedSequence(seed, spawn_key=(0,))`` and the
  agents' seeds (see `agent_seed`) from ``SeedSequence(seed, spawn_key=(1, i))``, so one
  master seed fixes the whole report; ratings are fed in game order, not completion order.
* **Win-rate interval.** A game's win share is 1 for a sole winner and 1/k for each of k
  tied winners. The 95% interval of an agent's win rate is a Student-t interval over
  *per-deal-group means* (the agent's mean win share over the ``P`` rotations of one deal),
  which are independent across deals and already have the deal luck averaged out. When
  that spread cannot be estimated (a single deal group, or every deal group with the same
  mean, e.g. an agent that wins every game) the interval falls back to the Wilson score
  interval with one trial per deal group, which is conservative because a per-deal mean in
  [0, 1] varies no more than a single Bernoulli trial.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from skyjo_env.core.engine import (
    illegal_action_message,
    legal_action_mask,
    new_batch,
    reset,
    step,
)
from skyjo_env.core.layout import (
    DECISIONS,
    EVENT_GAME_ENDED,
    LINES_ELIMINATED,
    ROUND,
    ROUNDS_FINISHED,
    TIMES_PENALISED,
    TOTAL,
)
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationEncoder
from skyjo_env.protocol import Agent

#: Largest number of games stepped together; more games reuse finished slots.
DEFAULT_MAX_BATCH = 8192

# Student-t 97.5% quantiles for 1..30 degrees of freedom (two-sided 95% interval).
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
_Z975 = 1.959963984540054


class AgentActionError(ValueError):
    """An agent returned a malformed or illegal action; the message names the agent."""


def t_quantile_975(df: int) -> float:
    """Two-sided 95% Student-t critical value for ``df`` >= 1 degrees of freedom.

    Exact table values up to 30; beyond, the Cornish-Fisher expansion (error < 1e-4).
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


def mean_confidence_interval(samples: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% Student-t interval of independent samples.

    Args:
        samples: float (n,), n >= 1.

    Returns:
        ``(mean, low, high)``; with one sample the interval is ``(-inf, inf)``.
    """
    samples = np.asarray(samples, dtype=np.float64)
    mean = float(samples.mean())
    if samples.size < 2:
        return mean, -math.inf, math.inf
    half = t_quantile_975(samples.size - 1) * float(samples.std(ddof=1)) / math.sqrt(samples.size)
    return mean, mean - half, mean + half


def win_rate_interval(per_deal_shares: np.ndarray) -> tuple[float, float, float]:
    """Win rate and its 95% interval from per-deal-group mean win shares.

    Args:
        per_deal_shares: float (D,), each in [0, 1]: one agent's mean win share over the
            rotations of one deal group.

    Returns:
        ``(win_rate, low, high)``: the Student-t interval over the D means, clipped to
        [0, 1]; the Wilson score interval with D trials when the spread is zero or D < 2.
    """
    shares = np.asarray(per_deal_shares, dtype=np.float64)
    rate, low, high = mean_confidence_interval(shares)
    if shares.size < 2 or float(shares.std()) == 0.0:
        low, high = wilson_interval(rate, shares.size)
    return rate, max(0.0, low), min(1.0, high)


def wilson_interval(rate: float, trials: int) -> tuple[float, float]:
    """95% Wilson score interval of a success fraction ``rate`` over ``trials`` trials."""
    z2 = _Z975**2
    center = (rate + z2 / (2 * trials)) / (1 + z2 / trials)
    half = _Z975 * math.sqrt(rate * (1 - rate) / trials + z2 / (4 * trials**2)) / (1 + z2 / trials)
    return max(0.0, center - half), min(1.0, center + half)


def deal_seeds(seed: int, num_deals: int) -> list[int]:
    """The deal seed of each deal group (prefix-stable: more deals extend the list).

    Args:
        seed: The master seed, a non-negative int.
        num_deals: Number of deal groups.

    Returns:
        ``num_deals`` non-negative ints for `skyjo_env.core.engine.reset`.
    """
    sequence = np.random.SeedSequence(_check_seed(seed), spawn_key=(0,))
    return [int(s) for s in sequence.generate_state(num_deals, np.uint64)]


def agent_seed(seed: int, index: int) -> int:
    """Seed of the generator of the agent at position ``index``, from the master seed."""
    sequence = np.random.SeedSequence(_check_seed(seed), spawn_key=(1, int(index)))
    return int(sequence.generate_state(1, np.uint64)[0])


def _check_seed(seed: Any) -> int:
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

    Game ``g`` is rotation ``g % P`` of deal group ``g // P``.

    Attributes:
        deal: int64 (G,), deal group of each game.
        rotation: int64 (G,), rotation ``r``: agent ``i`` sat at seat ``(i + r) % P``.
        seat: int64 (G, P), seat of each agent.
        total: int64 (G, P), final total score of each agent.
        win_share: float64 (G, P), 1/k for each of the k lowest totals, else 0.
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
    def empty(cls, num_games: int, num_players: int) -> GameRecords:
        """Zeroed records for ``num_games`` games of ``num_players`` agents."""
        games = np.arange(num_games, dtype=np.int64)
        rotation = games % num_players
        seat = (np.arange(num_players, dtype=np.int64)[None, :] + rotation[:, None]) % num_players
        by_agent = (num_games, num_players)
        return cls(
            deal=games // num_players,
            rotation=rotation,
            seat=seat,
            total=np.zeros(by_agent, np.int64),
            win_share=np.zeros(by_agent, np.float64),
            rounds=np.zeros(num_games, np.int64),
            rounds_finished=np.zeros(by_agent, np.int64),
            times_penalised=np.zeros(by_agent, np.int64),
            lines_eliminated=np.zeros(by_agent, np.int64),
            truncated=np.zeros(num_games, bool),
            decisions=np.zeros(num_games, np.int64),
        )

    @property
    def num_games(self) -> int:
        """Number of games ``G``."""
        return self.deal.shape[0]


@dataclass
class AgentStats:
    """One agent position's results, aggregated over every seat it occupied.

    Rates are per game unless named otherwise. ``win_rate_ci`` is the 95% Student-t
    interval over per-deal-group mean win shares, clipped to [0, 1] (see
    `win_rate_interval`).
    """

    name: str
    spec: str
    games: int
    wins: float
    win_rate: float
    win_rate_ci: tuple[float, float]
    mean_total: float
    mean_total_ci: tuple[float, float]
    mean_round_score: float
    mean_rounds_per_game: float
    finish_rate: float
    penalty_rate: float
    penalties_per_game: float
    eliminations_per_game: float
    mean_rank: float
    seat_win_rates: list[float]
    truncated_games: int
    rating_mu: float | None = None
    rating_sigma: float | None = None
    rating_ordinal: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data (lists, floats, ints) for JSON and CSV."""
        return {
            "name": self.name,
            "spec": self.spec,
            "games": self.games,
            "wins": self.wins,
            "win_rate": self.win_rate,
            "win_rate_ci": list(self.win_rate_ci),
            "mean_total": self.mean_total,
            "mean_total_ci": list(self.mean_total_ci),
            "mean_round_score": self.mean_round_score,
            "mean_rounds_per_game": self.mean_rounds_per_game,
            "finish_rate": self.finish_rate,
            "penalty_rate": self.penalty_rate,
            "penalties_per_game": self.penalties_per_game,
            "eliminations_per_game": self.eliminations_per_game,
            "mean_rank": self.mean_rank,
            "seat_win_rates": list(self.seat_win_rates),
            "truncated_games": self.truncated_games,
            "rating": {
                "model": "openskill.PlackettLuce",
                "mu": self.rating_mu,
                "sigma": self.rating_sigma,
                "ordinal": self.rating_ordinal,
            },
        }


@dataclass
class TournamentResult:
    """Everything a tournament measured.

    Attributes:
        games: Games played (a multiple of the number of agents).
        requested_games: Games asked for before rounding up.
        deals: Deal groups (``games / P``).
        seed: The master seed.
        rules: The rules played.
        agents: Per-agent statistics in the order the agents were given.
        records: Per-game outcomes.
        elapsed_s: Wall time of the games (ratings and statistics excluded).
    """

    games: int
    requested_games: int
    deals: int
    seed: int
    rules: SkyjoRules
    agents: list[AgentStats]
    records: GameRecords = field(repr=False)
    elapsed_s: float = 0.0

    @property
    def games_per_second(self) -> float:
        """Full games per second of wall time."""
        return self.games / self.elapsed_s if self.elapsed_s > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON form: ``games``, ``seed``, ``rules``, ``agents`` and more."""
        return {
            "games": self.games,
            "requested_games": self.requested_games,
            "deals": self.deals,
            "seed": self.seed,
            "num_players": self.rules.num_players,
            "rules": self.rules.to_dict(),
            "win_rate_ci_method": (
                "95% Student-t interval over per-deal-group mean win shares "
                "(each deal played in all seat rotations; shared wins count 1/k); "
                "Wilson score interval over deal groups when their spread is zero"
            ),
            "truncated_games": int(self.records.truncated.sum()),
            "elapsed_s": self.elapsed_s,
            "games_per_second": self.games_per_second if self.elapsed_s > 0 else None,
            "agents": [stats.to_dict() for stats in self.agents],
        }


def _progress_bar(total: int, progress: bool | None):
    from tqdm.auto import tqdm

    enabled = sys.stderr.isatty() if progress is None else bool(progress)
    return tqdm(total=total, unit="game", desc="games", disable=not enabled, leave=False)


def _check_actions(
    actions: Any, rows: np.ndarray, masks: np.ndarray, name: str, state, slot_game: np.ndarray
) -> np.ndarray:
    """Validate one agent's answer for ``rows`` of the batch; int64 (len(rows),)."""
    array = np.asarray(actions)
    if array.shape != rows.shape:
        raise AgentActionError(
            f"agent {name!r} returned actions of shape {array.shape} for {rows.size} games; "
            f"expected ({rows.size},)"
        )
    if not np.issubdtype(array.dtype, np.integer):
        raise AgentActionError(f"agent {name!r} returned actions of dtype {array.dtype}, not ints")
    array = array.astype(np.int64, copy=False)
    num_actions = masks.shape[1]
    in_range = (array >= 0) & (array < num_actions)
    legal = in_range.copy()
    legal[in_range] = masks[rows[in_range], array[in_range]]
    if not legal.all():
        k = int(np.flatnonzero(~legal)[0])
        row = int(rows[k])
        detail = illegal_action_message(state, row, int(array[k]))
        raise AgentActionError(
            f"agent {name!r} chose an illegal action in tournament game {int(slot_game[row])}: "
            f"{detail}"
        )
    return array


def play_games(
    agents: Sequence[Agent],
    rules: SkyjoRules,
    games: int,
    seed: int,
    *,
    names: Sequence[str] | None = None,
    progress: bool | None = None,
    max_batch: int = DEFAULT_MAX_BATCH,
) -> tuple[GameRecords, float]:
    """Play the games of a tournament and record their outcomes (no statistics).

    Args:
        agents: One agent per seat position, ``len(agents) == rules.num_players``.
        rules: The rules (``num_players`` must equal the number of agents).
        games: Games wanted (>= 1); rounded up to a multiple of ``num_players``.
        seed: Master seed of the deals (non-negative int).
        names: Names used in error messages (default: the agents' names).
        progress: Show a progress bar; None shows one only when stderr is a terminal.
        max_batch: Most games stepped together.

    Returns:
        ``(records, elapsed_s)``.

    Raises:
        ValueError: Bad arguments. AgentActionError: an agent returned an illegal or
        malformed action.
    """
    players = rules.num_players
    if len(agents) != players:
        raise ValueError(f"{len(agents)} agents for {players} seats; give one agent per seat")
    if not isinstance(games, (int, np.integer)) or isinstance(games, bool) or games < 1:
        raise ValueError(f"games must be an int >= 1, got {games!r}")
    if not isinstance(max_batch, (int, np.integer)) or max_batch < 1:
        raise ValueError(f"max_batch must be an int >= 1, got {max_batch!r}")
    names = list(names) if names is not None else display_names([a.name for a in agents])
    num_deals = -(-int(games) // players)
    num_games = num_deals * players
    seeds = deal_seeds(seed, num_deals)
    records = GameRecords.empty(num_games, players)

    batch = min(num_games, int(max_batch))
    state = new_batch(rules, batch)
    encoder = ObservationEncoder(rules)
    observations = np.empty((batch, encoder.size), np.float32)
    masks = np.empty((batch, state.num_actions), bool)
    actions = np.empty(batch, np.int64)
    events = np.empty(batch, np.int32)
    slot_game = np.full(batch, -1, np.int64)  # game running in each slot, -1 when idle
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
        reset(state, [seeds[g // players] for g in ids], which=slots)
        slot_game[slots] = ids
        rotation = ids % players
        # agent i sits at seat (i + r) % P, so seat s holds agent (s - r) % P
        seat_owner[slots] = (np.arange(players)[None, :] - rotation[:, None]) % players

    started = time.perf_counter()
    start(all_slots)
    finished = 0
    with _progress_bar(num_games, progress) as bar:
        while finished < num_games:
            legal_action_mask(state, out=masks)
            encoder.encode(state, state.current_player, out=observations)
            owner = seat_owner[all_slots, state.current_player]
            actions.fill(-1)
            for index, agent in enumerate(agents):
                rows = np.flatnonzero(owner == index)
                if rows.size == 0:
                    continue
                chosen = agent.act(observations[rows], masks[rows])
                actions[rows] = _check_actions(
                    chosen, rows, masks, names[index], state, slot_game
                )
            step(state, actions, events)
            done = np.flatnonzero(events & EVENT_GAME_ENDED)
            if done.size == 0:
                continue
            _record(records, state, done, slot_game[done])
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

    totals = by_agent(TOTAL)
    records.total[ids] = totals
    is_winner = totals == totals.min(axis=1, keepdims=True)
    records.win_share[ids] = is_winner / is_winner.sum(axis=1, keepdims=True)
    records.rounds[ids] = state.game[slots, ROUND]
    records.rounds_finished[ids] = by_agent(ROUNDS_FINISHED)
    records.times_penalised[ids] = by_agent(TIMES_PENALISED)
    records.lines_eliminated[ids] = by_agent(LINES_ELIMINATED)
    records.truncated[ids] = state.truncated[slots]
    records.decisions[ids] = state.game[slots, DECISIONS]


def openskill_ratings(records: GameRecords, names: Sequence[str]) -> list[tuple[float, float, float]]:
    """OpenSkill Plackett-Luce ratings from the games, fed one by one in game order.

    Each game ranks the agents by final total (lowest first; equal totals tie).

    Args:
        records: The games.
        names: One name per agent position.

    Returns:
        ``(mu, sigma, ordinal)`` per agent position (ordinal = mu - 3 sigma).
    """
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = [model.rating(name=name) for name in names]
    totals = records.total
    # rank = 1 + number of strictly lower totals: ties share a rank
    ranks = 1 + (totals[:, None, :] < totals[:, :, None]).sum(axis=2)
    for g in range(records.num_games):
        teams = model.rate([[rating] for rating in ratings], ranks=ranks[g].tolist())
        ratings = [team[0] for team in teams]
    return [(float(r.mu), float(r.sigma), float(r.ordinal())) for r in ratings]


def summarize(
    records: GameRecords,
    names: Sequence[str],
    specs: Sequence[str],
    *,
    ratings: bool = True,
) -> list[AgentStats]:
    """Per-agent statistics from the game records.

    Args:
        records: The games.
        names: Display name per agent position.
        specs: Spec (or description) per agent position.
        ratings: Also compute OpenSkill ratings.

    Returns:
        One `AgentStats` per agent position, in order.
    """
    players = records.total.shape[1]
    num_deals = records.num_games // players
    rounds = records.rounds
    total_rounds = int(rounds.sum())
    rating_values = openskill_ratings(records, names) if ratings else [(None,) * 3] * players
    totals = records.total
    rank_of = 1 + (totals[:, None, :] < totals[:, :, None]).sum(axis=2)
    stats = []
    for i in range(players):
        share = records.win_share[:, i]
        per_deal_share = share.reshape(num_deals, players).mean(axis=1)
        win_rate, low, high = win_rate_interval(per_deal_share)
        per_deal_total = totals[:, i].reshape(num_deals, players).mean(axis=1)
        mean_total, total_low, total_high = mean_confidence_interval(per_deal_total)
        finished = int(records.rounds_finished[:, i].sum())
        penalised = int(records.times_penalised[:, i].sum())
        seat_rates = [
            float(share[records.seat[:, i] == s].mean()) for s in range(players)
        ]
        mu, sigma, ordinal = rating_values[i]
        stats.append(
            AgentStats(
                name=names[i],
                spec=specs[i],
                games=records.num_games,
                wins=float(share.sum()),
                win_rate=win_rate,
                win_rate_ci=(low, high),
                mean_total=mean_total,
                mean_total_ci=(total_low, total_high)
                if math.isfinite(total_low)
                else (mean_total, mean_total),
                mean_round_score=float(totals[:, i].sum() / total_rounds)
                if total_rounds
                else 0.0,
                mean_rounds_per_game=float(rounds.mean()),
                finish_rate=finished / total_rounds if total_rounds else 0.0,
                penalty_rate=penalised / finished if finished else 0.0,
                penalties_per_game=penalised / records.num_games,
                eliminations_per_game=float(records.lines_eliminated[:, i].mean()),
                mean_rank=float(rank_of[:, i].mean()),
                seat_win_rates=seat_rates,
                truncated_games=int(records.truncated.sum()),
                rating_mu=mu,
                rating_sigma=sigma,
                rating_ordinal=ordinal,
            )
        )
    return stats


def play_tournament(
    agents: Sequence[Agent],
    rules: SkyjoRules,
    games: int,
    seed: int,
    *,
    specs: Sequence[str] | None = None,
    progress: bool | None = None,
    ratings: bool = True,
    max_batch: int = DEFAULT_MAX_BATCH,
) -> TournamentResult:
    """Play a tournament with seat rotation over duplicated deals and summarize it.

    Args:
        agents: One agent per seat position (the same object may not be reused across
            positions if it keeps state; distinct objects are fine even if alike).
            ``len(agents)`` must equal ``rules.num_players``.
        rules: The rules to play.
        games: Games wanted (>= 1), rounded up to a multiple of the number of agents.
        seed: Master seed (non-negative int) fixing every deal.
        specs: Spec per agent for the report (default: the agents' names).
        progress: Progress bar over finished games; None = only on a terminal.
        ratings: Compute OpenSkill Plackett-Luce ratings.
        max_batch: Most games stepped together.

    Returns:
        A `TournamentResult`; ``result.agents`` follows the order of ``agents``, with
        repeated names numbered (``ev#1``, ``ev#2``).

    Raises:
        ValueError: Bad arguments. AgentActionError: an agent chose an illegal action.
    """
    names = display_names([agent.name for agent in agents])
    specs = list(specs) if specs is not None else [agent.name for agent in agents]
    if len(specs) != len(agents):
        raise ValueError(f"{len(specs)} specs for {len(agents)} agents")
    records, elapsed = play_games(
        agents, rules, games, seed, names=names, progress=progress, max_batch=max_batch
    )
    return TournamentResult(
        games=records.num_games,
        requested_games=int(games),
        deals=records.num_games // rules.num_players,
        seed=int(seed),
        rules=rules,
        agents=summarize(records, names, specs, ratings=ratings),
        records=records,
        elapsed_s=elapsed,
    )


def evaluate_agents(
    specs: Sequence[str],
    rules: SkyjoRules,
    games: int,
    seed: int,
    *,
    progress: bool | None = None,
    ratings: bool = True,
) -> TournamentResult:
    """Build agents from specs (see `agents.registry.make_agent`) and play a tournament.

    Agent ``i`` gets its own generator seeded with ``agent_seed(seed, i)``.

    Args:
        specs: One spec per seat position.
        rules: The rules; ``num_players`` is set to ``len(specs)``.
        games: Games wanted (>= 1).
        seed: Master seed.
        progress: Progress bar; None = only on a terminal.
        ratings: Compute OpenSkill ratings.

    Returns:
        The `TournamentResult`.
    """
    from agents.registry import make_agent

    _check_seed(seed)
    rules = rules.replace(num_players=len(specs)) if rules.num_players != len(specs) else rules
    agents = [make_agent(spec, rules, agent_seed(seed, i)) for i, spec in enumerate(specs)]
    return play_tournament(
        agents, rules, games, seed, specs=list(specs), progress=progress, ratings=ratings
    )


__all__ = [
    "AgentActionError",
    "AgentStats",
    "GameRecords",
    "TournamentResult",
    "agent_seed",
    "deal_seeds",
    "display_names",
    "evaluate_agents",
    "mean_confidence_interval",
    "openskill_ratings",
    "play_games",
    "play_tournament",
    "summarize",
    "t_quantile_975",
    "wilson_interval",
    "win_rate_interval",
]
