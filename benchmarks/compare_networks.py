"""Compare networks against ``ev`` on the same deals, with paired differences.

Two networks' win rates over different games differ by a few points from luck alone; over
the same deals much of that luck is shared. This script plays each network against ``ev``
in every other seat on the same ``--games`` (same ``--seed``: the same deals, seats
rotated) and prints each win rate with its 95% interval, and its difference from the first
network's on the same deal groups with the interval of that paired difference.

Usage::

    python benchmarks/compare_networks.py models/ppo_2p.zip runs/distilled.zip \\
        [--games 10000] [--seed 4242]

All networks must be trained for the same rules; a network trained for others, or a
file that is not a readable checkpoint, is refused with a one-line error (exit 2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np


def network_rules(checkpoint: str | Path):
    """The `SkyjoRules` a checkpoint was trained for."""
    from agents.ppo.checkpoint import read_metadata
    from skyjo_env.core import SkyjoRules

    return SkyjoRules.from_dict(read_metadata(checkpoint)["rules"])


def deal_win_shares(network: str | Path, games: int, seed: int) -> np.ndarray:
    """``ppo:network`` against ``ev`` in every other seat: its mean win share per deal
    group, float64 (D,) (the same deals for every network with the same ``games``,
    ``seed`` and number of players)."""
    from agents.evaluation.tournament import play_tournament
    from agents.registry import make_agent

    rules = network_rules(network)
    agents = [make_agent(f"ppo:{network}", rules, seed=0)] + [
        make_agent("ev", rules, seed=seat) for seat in range(1, rules.num_players)]
    records = play_tournament(agents, rules, games, seed, progress=False, ratings=False).records
    return np.bincount(records.deal, weights=records.win_share[:, 0]) / np.bincount(records.deal)


def interval_text(shares: np.ndarray, signed: bool = False) -> str:
    """``"72.0% [71.2, 72.9]"``: the win rate of per-deal win shares float (D,) and its
    95% interval (`win_rate_interval`: Student-t, clipped to [0, 100]); with ``signed``,
    ``"+1.2 [+0.6, +1.8]"``: the mean of per-deal differences and its Student-t
    interval, in points."""
    from agents.evaluation.statistics import mean_confidence_interval, win_rate_interval

    interval = mean_confidence_interval if signed else win_rate_interval
    mean, low, high = (100 * value for value in interval(shares))
    if signed:
        return f"{mean:+.1f} [{low:+.1f}, {high:+.1f}]"
    return f"{mean:.1f}% [{low:.1f}, {high:.1f}]"


def checked_rules(networks: list[Path]):
    """The rules all ``networks`` were trained for, or a `ValueError` naming the first
    network trained for others (their deals and seats could not be paired)."""
    rules = network_rules(networks[0])
    for network in networks[1:]:
        if network_rules(network) != rules:
            raise ValueError(f"{network} was trained for other rules than {networks[0]} "
                             f"({rules.num_players} players); compare networks of one game")
    return rules


def main(argv: list[str] | None = None) -> int:
    """Play every network on the same deals and print the table; returns the exit code
    (2: a bad argument or checkpoint, with a one-line error)."""
    import torch

    from agents.ppo.checkpoint import CheckpointError

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("networks", nargs="+", type=Path, help="skyjo-rl checkpoints")
    parser.add_argument("--games", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=4242)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    try:
        if args.games < 1 or args.seed < 0:
            raise ValueError(f"--games must be >= 1 and --seed >= 0, got {args.games} and "
                             f"{args.seed}")
        players = checked_rules(args.networks).num_players
    except (CheckpointError, ValueError) as error:
        print(f"{parser.prog}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    against = " ".join(["ev"] * (players - 1))
    print(f"{args.games} games against {against}, seed {args.seed}")
    print(f"{'network':<40} {'win rate, 95% CI':<20}  minus the first's on the same deals")
    first = None
    for network in args.networks:
        shares = deal_win_shares(network, args.games, args.seed)
        paired = "" if first is None else interval_text(shares - first, signed=True)
        first = shares if first is None else first
        print(f"{str(network):<40} {interval_text(shares):<20}  {paired}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
