"""Tournaments: play agents over duplicated, seat-rotated deals and summarize each agent
(`play_tournament`, `evaluate_agents` from specs); `TournamentResult` is what reports print."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.evaluation.games import (
    DEFAULT_MAX_BATCH,
    SEATING_WORDS,
    GameRecords,
    agent_seed,
    check_seed,
    display_names,
    play_games,
)
from agents.evaluation.statistics import (
    mean_confidence_interval,
    openskill_ratings,
    win_rate_interval,
)
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.protocol import Agent

#: How games stopped by the turn cap count (in the JSON report and the table footnote).
TRUNCATED_POLICY = (
    "a game truncated by the turn cap has no winner: it counts as a game without a win "
    "for every agent (win rates then sum to the decided fraction) and is left out of "
    "the ratings"
)


@dataclass
class AgentStats:
    """One agent position's results, aggregated over every seat it occupied.

    Rates are per game unless named otherwise. ``win_rate_ci`` is the 95% Student-t
    interval over per-deal-group mean win shares, clipped to [0, 1] (see
    `win_rate_interval`). A game truncated by the turn cap counts as a game without a win
    (its win share is 0 for every agent) and is left out of the rating.
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
        games: Games played (whole deal groups: a multiple of P, or of P! when every seat
            order is played).
        requested_games: Games asked for before rounding up.
        deals: Deal groups (``games / R``, R games per deal group).
        seed: The master seed.
        rules: The rules played.
        agents: Per-agent statistics in the order the agents were given.
        records: Per-game outcomes.
        elapsed_s: Wall time of the games (ratings and statistics excluded).
        seating: How each deal group seated the agents: ``cyclic`` (the P rotations) or
            ``all`` (all P! orders), see `agents.evaluation.games.seat_arrangements`.
    """

    games: int
    requested_games: int
    deals: int
    seed: int
    rules: SkyjoRules
    agents: list[AgentStats]
    records: GameRecords = field(repr=False)
    elapsed_s: float = 0.0
    seating: str = "cyclic"

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
            "seating": self.seating,
            "rules": self.rules.to_dict(),
            "win_rate_ci_method": (
                "95% Student-t interval over per-deal-group mean win shares "
                f"(each deal played in all seat {SEATING_WORDS[self.seating]}; shared wins count "
                "1/k); Wilson score interval over deal groups when their spread is zero"
            ),
            "truncated_games": int(self.records.truncated.sum()),
            "truncated_games_policy": TRUNCATED_POLICY,
            "elapsed_s": self.elapsed_s,
            "games_per_second": self.games_per_second if self.elapsed_s > 0 else None,
            "agents": [stats.to_dict() for stats in self.agents],
        }


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
    group = records.games_per_deal
    num_deals = records.num_games // group
    rounds = records.rounds
    total_rounds = int(rounds.sum())
    rating_values = openskill_ratings(records, names) if ratings else [(None,) * 3] * players
    totals = records.total
    rank_of = 1 + (totals[:, None, :] < totals[:, :, None]).sum(axis=2)
    stats = []
    for i in range(players):
        share = records.win_share[:, i]
        per_deal_share = share.reshape(num_deals, group).mean(axis=1)
        win_rate, low, high = win_rate_interval(per_deal_share)
        per_deal_total = totals[:, i].reshape(num_deals, group).mean(axis=1)
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
    seating: str = "cyclic",
    recorder=None,
) -> TournamentResult:
    """Play a tournament with seat rotation over duplicated deals and summarize it.

    Args:
        agents: One agent per seat position (the same object may not be reused across
            positions if it keeps state; distinct objects are fine even if alike).
            ``len(agents)`` must equal ``rules.num_players``.
        rules: The rules to play.
        games: Games wanted (>= 1), rounded up to whole deal groups (P games each, or P!
            with ``seating="all"``).
        seed: Master seed (non-negative int) fixing every deal.
        specs: Spec per agent for the report (default: the agents' names).
        progress: Progress bar over finished games; None = only on a terminal.
        ratings: Compute OpenSkill Plackett-Luce ratings.
        max_batch: Most games stepped together.
        seating: ``cyclic`` (P rotations of each deal) or ``all`` (all P! seat orders:
            every agent follows every other equally often), `seat_arrangements`.
        recorder: Optional `agents.evaluation.replays.ReplayRecorder` that writes the move
            logs of chosen games.

    Returns:
        A `TournamentResult`; ``result.agents`` follows the order of ``agents``, with
        repeated names numbered (``ev#1``, ``ev#2``).

    Raises:
        ValueError: Bad arguments (`TooManyGamesError` for too many games).
        AgentActionError: an agent's ``act`` raised or chose an illegal action.
    """
    names = display_names([agent.name for agent in agents])
    specs = list(specs) if specs is not None else [agent.name for agent in agents]
    if len(specs) != len(agents):
        raise ValueError(f"{len(specs)} specs for {len(agents)} agents")
    records, elapsed = play_games(
        agents,
        rules,
        games,
        seed,
        names=names,
        specs=specs,
        progress=progress,
        max_batch=max_batch,
        seating=seating,
        recorder=recorder,
    )
    return tournament_result(records, rules, games, seed, names, specs, elapsed_s=elapsed,
                             ratings=ratings, seating=seating)


def tournament_result(
    records: GameRecords,
    rules: SkyjoRules,
    requested_games: int,
    seed: int,
    names: Sequence[str],
    specs: Sequence[str],
    *,
    elapsed_s: float,
    ratings: bool = True,
    seating: str = "cyclic",
) -> TournamentResult:
    """Summarize the records of a whole tournament (in game order) into its result.

    Args:
        records: Every game of the tournament, in game order (merged chunks included).
        rules: The rules played.
        requested_games: Games asked for before rounding up.
        seed: The master seed.
        names: Display name per agent position.
        specs: Spec per agent position.
        elapsed_s: Wall time of the games.
        ratings: Compute OpenSkill ratings.
        seating: The seating the records were played with.

    Returns:
        The `TournamentResult`.
    """
    return TournamentResult(
        games=records.num_games,
        requested_games=int(requested_games),
        deals=records.num_games // records.games_per_deal,
        seed=int(seed),
        rules=rules,
        agents=summarize(records, names, specs, ratings=ratings),
        records=records,
        elapsed_s=elapsed_s,
        seating=seating,
    )


def evaluate_agents(
    specs: Sequence[str],
    rules: SkyjoRules,
    games: int,
    seed: int,
    *,
    progress: bool | None = None,
    ratings: bool = True,
    seating: str = "cyclic",
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
        seating: ``cyclic`` or ``all`` (see `play_tournament`).

    Returns:
        The `TournamentResult`.
    """
    from agents.registry import make_agent

    check_seed(seed)
    rules = rules.replace(num_players=len(specs)) if rules.num_players != len(specs) else rules
    agents = [make_agent(spec, rules, agent_seed(seed, i)) for i, spec in enumerate(specs)]
    return play_tournament(agents, rules, games, seed, specs=list(specs), progress=progress,
                           ratings=ratings, seating=seating)
