"""Command line of ``skyjo-compare``: two settings of an agent judged on the same deals.

Two subcommands (`agents.evaluation.compare`)::

    # two evaluate.py runs with the same --seed and player count, each with --games-csv
    python evaluate.py --agents SPEC_A ev --games 2000 --seed 2 --games-csv a.games.csv
    python evaluate.py --agents SPEC_B ev --games 2000 --seed 2 --games-csv b.games.csv
    skyjo-compare runs a.games.csv b.games.csv [--agent 0]

    # networks, each played against ev in every other seat on the same games
    skyjo-compare networks models/ppo_2p.zip runs/x/best.zip [--games 10000] [--seed 4242]

Each prints every win rate with its 95% interval and, from the second on, its difference
from the first's on the same deal groups with the interval of that paired difference
(``python -m agents.cli.compare`` works the same). Files that cannot be paired (other
seeds or player counts, no deal group in common, not a ``--games-csv`` file), networks
trained for other rules, an unreadable checkpoint or a bad count end the run with a
one-line message on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from agents.cli import EXIT_INTERRUPTED
from agents.evaluation.compare import (
    PairingError,
    common_rules,
    interval_text,
    network_deal_shares,
    paired_runs,
)

PROG = "skyjo-compare"
EXAMPLES = """examples:
  python evaluate.py --agents SPEC_A ev --games 2000 --seed 2 --games-csv a.games.csv
  python evaluate.py --agents SPEC_B ev --games 2000 --seed 2 --games-csv b.games.csv
  skyjo-compare runs a.games.csv b.games.csv [--agent 0]
  skyjo-compare networks models/ppo_2p.zip runs/x/best.zip [--games 10000] [--seed 4242]"""
EXIT_USAGE = 2
#: Width of the first column (file or network names).
_NAME_WIDTH = 40


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``skyjo-compare`` (subcommands ``runs`` and ``networks``)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Compare two settings of an agent on the same deals: paired win-rate\n"
        "differences with 95% intervals.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXAMPLES,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{runs,networks}")
    runs = commands.add_parser(
        "runs",
        help="pair two evaluate.py runs (same --seed and player count) on their common deals",
        description="Pair two evaluate.py runs played with the same --seed and player count, "
        "from the files they wrote with --games-csv, over the deal groups both played in "
        "full: each run's win rate of one agent position and the mean per-deal difference "
        "(second minus first) with its 95% Student-t interval.",
    )
    runs.add_argument("first", type=Path, help="--games-csv file of the first run")
    runs.add_argument("second", type=Path, help="--games-csv file of the second run")
    runs.add_argument("--agent", type=int, default=0,
                      help="agent position, the order of --agents (default 0)")
    networks = commands.add_parser(
        "networks",
        help="play networks against ev on the same games and pair their win rates",
        description="Play each network (a skyjo-rl checkpoint) against ev in every other "
        "seat on the same games (same --seed: the same deals, seats rotated); all networks "
        "must be trained for the same rules.",
    )
    networks.add_argument("networks", nargs="+", type=Path, help="skyjo-rl checkpoints")
    networks.add_argument("--games", type=int, default=10000, help="games (default 10000)")
    networks.add_argument("--seed", type=int, default=4242, help="seed of the deals (default 4242)")
    return parser


def _fail(message: str, status: int) -> int:
    print(f"{PROG}: error: {' '.join(str(message).split())}", file=sys.stderr)
    return status


def _row(name: object, shares, first=None) -> str:
    paired = "" if first is None else interval_text(shares - first, signed=True)
    return f"{str(name):<{_NAME_WIDTH}} {interval_text(shares):<20}  {paired}".rstrip()


def _header(what: str) -> str:
    return f"{what:<{_NAME_WIDTH}} {'win rate, 95% CI':<20}  minus the first's on the same deals"


def compare_runs(args: argparse.Namespace) -> int:
    """``skyjo-compare runs``: print both win rates and their paired difference."""
    try:
        first, second, seed = paired_runs(args.first, args.second, args.agent)
    except PairingError as error:
        return _fail(str(error), EXIT_USAGE)
    print(f"agent {args.agent}, {first.size} deal groups in common, seed {seed}")
    print(_header("run"))
    print(_row(args.first, first))
    print(_row(args.second, second, first))
    return 0


def compare_networks(args: argparse.Namespace) -> int:
    """``skyjo-compare networks``: play every network on the same deals, print the table."""
    import torch

    from agents.ppo.checkpoint import CheckpointError

    try:
        if args.games < 1 or args.seed < 0:
            raise ValueError(f"--games must be >= 1 and --seed >= 0, got {args.games} and "
                             f"{args.seed}")
        players = common_rules(args.networks).num_players
    except (CheckpointError, ValueError) as error:
        return _fail(str(error), EXIT_USAGE)
    torch.set_num_threads(1)
    against = " ".join(["ev"] * (players - 1))
    print(f"{args.games} games against {against}, seed {args.seed}")
    print(_header("network"))
    first = None
    for network in args.networks:
        shares = network_deal_shares(network, args.games, args.seed)
        print(_row(network, shares, first), flush=True)
        first = shares if first is None else first
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``skyjo-compare``.

    Args:
        argv: Arguments without the program name (default ``sys.argv[1:]``).

    Returns:
        The exit status: 0 on success, 2 for a bad input (one line on stderr), 130 on
        Ctrl-C.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse has printed its message already
        return int(exit_.code or 0)
    try:
        return compare_runs(args) if args.command == "runs" else compare_networks(args)
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)


if __name__ == "__main__":
    sys.exit(main())
