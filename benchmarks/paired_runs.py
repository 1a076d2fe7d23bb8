"""Pair two evaluation runs on the deals they share: the difference of one agent's win rate.

Two settings of an agent (two search configurations, two networks) played in separate
``evaluate.py`` runs with the same ``--seed`` and player count meet the same deal groups
(a run of fewer games plays a prefix of a longer run's deals). Much of a deal's luck is
shared, so the per-deal difference of the two win rates has a far narrower interval than
the two intervals suggest. This script reads the per-game files both runs wrote with
``--games-csv`` and prints, over the deal groups both played in full, each run's win rate
of agent position ``--agent`` (default 0) and the mean per-deal difference (second minus
first) with its 95% Student-t interval.

Usage::

    python evaluate.py --agents SPEC_A ev --games 2000 --seed 2 --games-csv a.csv
    python evaluate.py --agents SPEC_B ev --games 2000 --seed 2 --games-csv b.csv
    python benchmarks/paired_runs.py a.csv b.csv [--agent 0]

Agents that draw random numbers of their own (a search, a sampling policy) play other
games in each run even on the same deal; the pairing removes the deal's luck, not theirs.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from compare_networks import interval_text  # the module beside this script


class PairingError(ValueError):
    """Two runs that cannot be paired, or a file that is not a ``--games-csv`` file."""


def read_games_csv(path: Path) -> dict[str, np.ndarray]:
    """The columns of a ``--games-csv`` file (`agents.evaluation.report.render_games_csv`):
    name -> float64 (G,)."""
    try:
        with open(path, encoding="utf-8") as file:
            header = file.readline().strip().split(",")
            if not {"seed", "deal", "rotation", "agent_0_win_share"} <= set(header):
                raise PairingError(f"{path}: not a --games-csv file of evaluate.py (its first "
                                   "line lacks the columns seed, deal, rotation, "
                                   "agent_0_win_share)")
            with warnings.catch_warnings():  # an empty body is reported below, once
                warnings.simplefilter("ignore", UserWarning)
                table = np.loadtxt(file, delimiter=",", dtype=np.float64, ndmin=2)
    except PairingError:
        raise
    except (OSError, UnicodeDecodeError, ValueError) as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise PairingError(f"{path}: not a readable --games-csv file ({first_line})") from error
    if table.shape[0] == 0 or table.shape[1] != len(header):
        raise PairingError(f"{path}: no games, or rows of other lengths than its header")
    return {name: table[:, i] for i, name in enumerate(header)}


def deal_shares(columns: dict[str, np.ndarray], agent: int) -> dict[int, float]:
    """Agent position ``agent``'s mean win share per deal group played in full (all its
    seat arrangements: P rotations, or P! orders with ``--seating all``, the most games
    any deal group of the file has): deal -> share."""
    deals = columns["deal"].astype(np.int64)
    shares = columns[f"agent_{agent}_win_share"]
    counts = np.bincount(deals)
    sums = np.bincount(deals, weights=shares)
    group = int(counts.max())
    return {int(d): float(sums[d] / group) for d in np.flatnonzero(counts == group)}


def paired(first: Path, second: Path, agent: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Per-deal win shares float64 (D,) of agent ``agent`` in both runs, over the D deal
    groups both played in full (deal order), and the seed.

    Raises:
        PairingError: Unreadable files, other seeds or player counts, no such agent, or
            no deal group in common.
    """
    runs = [read_games_csv(first), read_games_csv(second)]
    seeds = [set(run["seed"].astype(np.int64).tolist()) for run in runs]
    if len(seeds[0]) != 1 or seeds[0] != seeds[1]:
        raise PairingError(f"the runs used other seeds ({sorted(seeds[0])} and "
                           f"{sorted(seeds[1])}): their deals differ")
    counts = [sum(name.endswith("_win_share") for name in run) for run in runs]
    if counts[0] != counts[1]:
        raise PairingError(f"the runs had {counts[0]} and {counts[1]} agents: their deals differ")
    if not 0 <= agent < counts[0]:
        raise PairingError(f"--agent must be in [0, {counts[0] - 1}], got {agent}")
    a, b = (deal_shares(run, agent) for run in runs)
    common = sorted(set(a) & set(b))
    if not common:
        raise PairingError("the runs have no whole deal group in common")
    return (np.array([a[d] for d in common]), np.array([b[d] for d in common]),
            int(next(iter(seeds[0]))))


def main(argv: list[str] | None = None) -> int:
    """Print both win rates and their paired difference; returns the exit code (2: a
    one-line error)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", type=Path, help="--games-csv file of the first run")
    parser.add_argument("second", type=Path, help="--games-csv file of the second run")
    parser.add_argument("--agent", type=int, default=0, help="agent position (default 0)")
    args = parser.parse_args(argv)
    try:
        a, b, seed = paired(args.first, args.second, args.agent)
    except PairingError as error:
        print(f"{parser.prog}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    print(f"agent {args.agent}, {a.size} deal groups in common, seed {seed}")
    print(f"{'run':<40} {'win rate, 95% CI':<20}  minus the first's on the same deals")
    print(f"{str(args.first):<40} {interval_text(a):<20}")
    print(f"{str(args.second):<40} {interval_text(b):<20}  {interval_text(b - a, signed=True)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
