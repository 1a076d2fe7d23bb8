"""Luck ceilings: how far a win rate can go when the skill gap is a known advantage.

Two measured ceilings (issue #10 item 5):

- **peek**: ``ev`` allowed to see its own face-down cards (`EVAgent.act_with_peek`) against
  plain ``ev``. An agent that only reads the observation cannot beat that edge by playing
  better own-grid decisions alone, so the peeker's win rate bounds what "knowing your cards"
  is worth; the rest is the luck of the draw. 2 players (peeker vs ev) and 4 players
  (peeker vs three ev); ``--tables 7 8`` adds other table sizes, ``--opponent greedy``
  seats ``greedy`` instead of ``ev`` in the other seats.
- **search** (``--search``): ``search(samples=8):ev`` vs ``ev`` through the tournament play
  loop (`agents.evaluation.games.play_games`); slow (milliseconds per decision), so few
  games.

Games are full games (to the target score) over duplicated deals with seat rotation, as in
the tournaments (`agents.evaluation.games`): deal group ``d`` is dealt from
``deal_seeds(seed, D)[d]`` and in rotation ``r`` agent ``i`` sits at seat ``(i + r) % P``.
The 95% interval is `win_rate_interval` over per-deal-group mean win shares; a tie for the
lowest total shares the win, a truncated game has no winner.

Usage::

    python experiments/ceilings.py [--games 2000] [--games4 800] [--seed 0]
                                  [--opponent ev|greedy] [--tables P ...] [--table-games 700]
                                  [--search] [--search-games 40]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
from _benchmarks import benchmark_module  # the module beside this script

from agents.baselines.ev import EVAgent
from agents.evaluation.games import check_games, deal_seeds, play_games
from agents.evaluation.statistics import win_rate_interval
from agents.registry import make_agent
from skyjo_env.core import SkyjoRules, legal_action_mask, new_batch, reset, step
from skyjo_env.encoding import ObservationEncoder

load_average = benchmark_module("machine_load").load_average


@dataclass
class Ceiling:
    """Agent 0's result in a match.

    Attributes:
        label: What was measured, e.g. ``"peek-ev vs ev (2 players)"``.
        games: Games played (whole deal groups).
        win_rate, low, high: Agent 0's win rate and its 95% interval.
        mean_margin: Agent 0's mean total minus the mean of the others' totals (lower is
            better for agent 0).
        truncated: Games stopped by the turn cap (no winner).
        seconds: Wall time of the games.
    """

    label: str
    games: int
    win_rate: float
    low: float
    high: float
    mean_margin: float
    truncated: int
    seconds: float

    def line(self) -> str:
        """One report line."""
        return (
            f"{self.label:<34} {self.games:>6} games  win {self.win_rate:6.1%} "
            f"[{self.low:6.1%}, {self.high:6.1%}]  margin {self.mean_margin:+6.2f}  "
            f"truncated {self.truncated}  {self.seconds:6.1f} s"
        )


def play_peek_match(rules: SkyjoRules, games: int, seed: int, *, peek: bool = True,
                    opponent: str = "ev"):
    """Full games of a peeking ev (agent 0) against ``P - 1`` ``opponent`` agents (agents
    1..P-1).

    Args:
        rules: The rules (``rules.num_players`` agents).
        games: Games wanted, rounded up to whole deal groups of ``P`` rotations.
        seed: Master seed of the deals (`deal_seeds`).
        peek: False makes agent 0 a plain ev (a control: against ev its win rate is then
            ~1/P).
        opponent: The other seats' agent spec, a deterministic heuristic (``ev``,
            ``greedy``).

    Returns:
        ``(totals, truncated)``: int64 (G, P) final totals by agent position, bool (G,);
        game ``g`` is rotation ``g % P`` of deal group ``g // P``.
    """
    players = rules.num_players
    num_deals = -(-check_games(games, players) // players)
    num_games = num_deals * players
    seeds = deal_seeds(seed, num_deals)
    state = new_batch(rules, num_games)
    reset(state, [seeds[g // players] for g in range(num_games)])
    rotation = np.arange(num_games) % players
    # agent i sits at seat (i + r) % P, so seat s holds agent (s - r) % P
    seat_owner = (np.arange(players)[None, :] - rotation[:, None]) % players
    peeker, others = EVAgent(rules, name="peek-ev"), make_agent(opponent, rules, seed)
    encoder = ObservationEncoder(rules)
    games_index = np.arange(num_games)
    while not state.all_over:
        running = ~state.game_over
        seat = state.current_player
        masks = legal_action_mask(state)
        observations = encoder.encode(state, seat)
        owner = seat_owner[games_index, seat]
        actions = np.full(num_games, -1, np.int64)
        mine = np.flatnonzero(running & (owner == 0))
        rest = np.flatnonzero(running & (owner != 0))
        if peek and mine.size:
            actions[mine] = peeker.act_with_peek(
                observations[mine], masks[mine], state.grid[mine, seat[mine]]
            )
        elif mine.size:
            actions[mine] = peeker.act(observations[mine], masks[mine])
        if rest.size:
            actions[rest] = others.act(observations[rest], masks[rest])
        step(state, actions)  # raises on an illegal action
    seat_of_agent = (np.arange(players)[None, :] + rotation[:, None]) % players
    totals = np.take_along_axis(state.total_scores, seat_of_agent, axis=1).astype(np.int64)
    return totals, state.truncated.copy()


def summarize(label: str, totals: np.ndarray, truncated: np.ndarray, seconds: float) -> Ceiling:
    """Agent 0's `Ceiling` from totals int (G, P) by agent position and truncated bool (G,)."""
    players = totals.shape[1]
    winner = (totals == totals.min(axis=1, keepdims=True)) & ~truncated[:, None]
    share = winner / np.maximum(winner.sum(axis=1, keepdims=True), 1)
    per_deal = share[:, 0].reshape(-1, players).mean(axis=1)
    rate, low, high = win_rate_interval(per_deal)
    margin = float((totals[:, 0] - totals[:, 1:].mean(axis=1)).mean())
    return Ceiling(label, totals.shape[0], rate, low, high, margin, int(truncated.sum()), seconds)


def peek_ceiling(players: int, games: int, seed: int, peek: bool = True,
                 opponent: str = "ev") -> Ceiling:
    """Peeking ev (or, ``peek`` False, plain ev) vs ``players - 1`` ``opponent`` under
    official rules."""
    rules = SkyjoRules(num_players=players)
    started = time.perf_counter()
    totals, truncated = play_peek_match(rules, games, seed, peek=peek, opponent=opponent)
    name = "peek-ev" if peek else "ev (control)"
    return summarize(f"{name} vs {players - 1}x {opponent} ({players} players)", totals,
                     truncated, time.perf_counter() - started)


def print_peek_ceilings(players: int, games: int, seed: int, opponent: str,
                        control: bool) -> None:
    """Print the `peek_ceiling` line at ``players`` seats, and with ``control`` the plain-ev
    line on the same deals after it."""
    print(peek_ceiling(players, games, seed, opponent=opponent).line(), flush=True)
    if control:
        print(peek_ceiling(players, games, seed, peek=False, opponent=opponent).line(),
              flush=True)


def search_ceiling(games: int, seed: int, samples: int = 8) -> Ceiling:
    """``search(samples=N):ev`` vs ``ev`` (2 players) through the tournament play loop."""
    rules = SkyjoRules(num_players=2)
    spec = f"search(samples={samples}):ev"
    agents = [make_agent(spec, rules, seed), make_agent("ev", rules, seed + 1)]
    records, seconds = play_games(agents, rules, games, seed, specs=[spec, "ev"])
    return summarize(f"{spec} vs ev (2 players)", records.total, records.truncated, seconds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=2000, help="2-player peek games")
    parser.add_argument("--games4", type=int, default=800, help="4-player peek games (0: skip)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--opponent", choices=["ev", "greedy"], default="ev",
                        help="the agent in the other seats of the peek matches")
    parser.add_argument("--tables", type=int, nargs="*", default=[], metavar="P",
                        choices=range(2, 9), help="more table sizes for peek matches (2-8)")
    parser.add_argument("--table-games", type=int, default=700,
                        help="peek games at each of --tables")
    parser.add_argument("--control", action="store_true",
                        help="also play ev vs ev in the same loop (should give ~1/P)")
    parser.add_argument("--search", action="store_true", help="also measure search vs ev")
    parser.add_argument("--search-games", type=int, default=40)
    parser.add_argument("--search-samples", type=int, default=8)
    args = parser.parse_args(argv)

    print(f"machine load before: {load_average()}")
    opponent = args.opponent
    print_peek_ceilings(2, args.games, args.seed, opponent, args.control)
    if args.games4 > 0:
        print_peek_ceilings(4, args.games4, args.seed, opponent, control=False)
    for players in args.tables:
        print_peek_ceilings(players, args.table_games, args.seed, opponent, args.control)
    if args.search:
        spec = f"search(samples={args.search_samples}):ev"
        print(f"  equivalent: python evaluate.py --agents '{spec}' ev "
              f"--games {args.search_games} --seed {args.seed}")
        print(search_ceiling(args.search_games, args.seed, args.search_samples).line(),
              flush=True)
    print(f"machine load after: {load_average()}")
    print("(peek has no evaluate.py equivalent: the agent needs the true grid, which only "
          "this loop hands it; the same deals and rotations as "
          f"'python evaluate.py --agents ev {opponent} --games {args.games} --seed {args.seed}')")


if __name__ == "__main__":
    main()
