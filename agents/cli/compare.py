"""Command line of ``skyjo-compare``: two settings of an agent judged on the same deals.

Three subcommands (`agents.evaluation.compare`, `agents.evaluation.curves`)::

    # two evaluate.py runs with the same --seed and player count, each with --games-csv
    python evaluate.py --agents SPEC_A ev --games 2000 --seed 2 --games-csv a.games.csv
    python evaluate.py --agents SPEC_B ev --games 2000 --seed 2 --games-csv b.games.csv
    skyjo-compare runs a.games.csv b.games.csv [c.games.csv ...] [--agent 0]
    # or, while two long runs with --resume are still playing (their chunks finished so far)
    skyjo-compare runs runs/a.chunks runs/b.chunks

    # networks, each played against ev in every other seat on the same games
    skyjo-compare networks models/ppo_2p.zip runs/x/best.zip [--games 10000] [--seed 4242]
    # ... and keep their games, to pair them again later with `runs`
    skyjo-compare networks A.zip B.zip --games-csv-dir runs/a_vs_b

    # training runs' learning curves (their eval.jsonl), as a table and a chart
    skyjo-compare curves runs/a [runs/b ...] [--out curves.png]

``runs`` and ``networks`` print every win rate with its 95% interval and, from the second on, its difference
from the first's on the same deal groups with the interval of that paired difference
(``python -m agents.cli.compare`` works the same). Files that cannot be paired (other
seeds or player counts, no deal group in common, not a ``--games-csv`` file or resume
directory, a damaged chunk), networks
trained for other rules, an unreadable checkpoint or a bad count end the run with a
one-line message on stderr and exit status 2. ``curves`` prints, per run and opponent,
the first, best and last evaluated win rate (the best with its step count and stage), and
with ``--out`` draws every evaluation, stage starts marked; a damaged ``eval.jsonl`` is a
one-line message naming its line.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from agents.cli import EXIT_INTERRUPTED, quiet_on_closed_stdout
from agents.evaluation.compare import (
    PairingError,
    common_rules,
    interval_text,
    network_tournament,
    paired_runs,
    tournament_deal_shares,
)
from agents.evaluation.curves import EvalLogError, read_eval_log, render_curves

PROG = "skyjo-compare"
EXAMPLES = """examples:
  python evaluate.py --agents SPEC_A ev --games 2000 --seed 2 --games-csv a.games.csv
  python evaluate.py --agents SPEC_B ev --games 2000 --seed 2 --games-csv b.games.csv
  skyjo-compare runs a.games.csv b.games.csv [--agent 0]
  skyjo-compare networks models/ppo_2p.zip runs/x/best.zip [--games 10000] [--seed 4242]
  skyjo-compare networks A.zip B.zip --games-csv-dir runs/a_vs_b
  skyjo-compare curves runs/recipe_3p [--out runs/recipe_3p/curve.png]"""
EXIT_USAGE = 2
#: Least width of the first column (file or network names); a longer name widens it.
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
    commands = parser.add_subparsers(dest="command", required=True,
                                     metavar="{runs,networks,curves}")
    runs = commands.add_parser(
        "runs",
        help="pair two or more evaluate.py runs (same --seed and player count) on their "
        "common deals",
        description="Pair two or more evaluate.py runs played with the same --seed and "
        "player count, from the files they wrote with --games-csv or from their --resume "
        "directories (the chunks finished so far, so long runs can be compared before they "
        "end), over the deal groups all of them played in full: each run's win rate of one "
        "agent position and, from the second on, the mean per-deal difference (that run "
        "minus the first) with its 95% Student-t interval.",
    )
    runs.add_argument("first", type=Path,
                      help="--games-csv file or --resume directory of the first run")
    runs.add_argument("second", type=Path,
                      help="--games-csv file or --resume directory of the second run")
    runs.add_argument("more", nargs="*", type=Path,
                      help="further runs, each compared with the first")
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
    networks.add_argument(
        "--games-csv-dir", type=Path, default=None, metavar="DIR",
        help="also write each network's games to DIR/<N>-<name>.games.csv (N its position "
        "from 1), the --games-csv format, so `skyjo-compare runs` can pair them again later",
    )
    curves = commands.add_parser(
        "curves",
        help="training runs' learning curves (eval.jsonl) as a table and a chart",
        description="Read each run's eval.jsonl (a run directory or the file) and print per "
        "opponent its first, best and last evaluated win rate; with --out, draw every "
        "evaluation against the step count (a staged run's stage starts marked).",
    )
    curves.add_argument("runs", nargs="+", type=Path, help="run directories or eval.jsonl files")
    curves.add_argument("--out", type=Path, default=None, help="write the chart to this PNG file")
    return parser


def _fail(message: str, status: int) -> int:
    print(f"{PROG}: error: {' '.join(str(message).split())}", file=sys.stderr)
    return status


def _name_width(names) -> int:
    """The first column's width: the longest of ``names``, at least ``_NAME_WIDTH``."""
    return max([_NAME_WIDTH, *(len(str(name)) for name in names)])


def _row(name: object, shares, first=None, width: int = _NAME_WIDTH) -> str:
    paired = "" if first is None else interval_text(shares - first, signed=True)
    return f"{str(name):<{width}} {interval_text(shares):<20}  {paired}".rstrip()


def _header(what: str, width: int = _NAME_WIDTH) -> str:
    return f"{what:<{width}} {'win rate, 95% CI':<20}  minus the first's on the same deals"


def compare_runs(args: argparse.Namespace) -> int:
    """``skyjo-compare runs``: print every run's win rate and, from the second on, its
    paired difference from the first's."""
    paths = [args.first, args.second, *args.more]
    try:
        *shares, seed = paired_runs(*paths, agent=args.agent)
    except PairingError as error:
        return _fail(str(error), EXIT_USAGE)
    print(f"agent {args.agent}, {shares[0].size} deal groups in common, seed {seed}")
    width = _name_width(paths)
    print(_header("run", width))
    print(_row(args.first, shares[0], width=width))
    for path, run_shares in zip(paths[1:], shares[1:], strict=True):
        print(_row(path, run_shares, shares[0], width=width))
    return 0


def compare_networks(args: argparse.Namespace) -> int:
    """``skyjo-compare networks``: play every network on the same deals, print the table."""
    import torch

    from agents.evaluation.report import render_games_csv, write_atomic
    from agents.ppo.checkpoint import CheckpointError

    try:
        if args.games < 1 or args.seed < 0:
            raise ValueError(f"--games must be >= 1 and --seed >= 0, got {args.games} and "
                             f"{args.seed}")
        players = common_rules(args.networks).num_players
        games_text = _games_text(args.games, players)  # checks the count against the cap
    except (CheckpointError, ValueError) as error:
        return _fail(str(error), EXIT_USAGE)
    try:
        csv_paths = _games_csv_paths(args.networks, args.games_csv_dir)
    except OSError as error:
        return _fail(f"--games-csv-dir {args.games_csv_dir}: {error.strerror or error}",
                     EXIT_USAGE)
    torch.set_num_threads(1)
    against = " ".join(["ev"] * (players - 1))
    print(f"{games_text} against {against}, seed {args.seed}")
    width = _name_width(args.networks)
    print(_header("network", width))
    first = None
    for network, csv_path in zip(args.networks, csv_paths, strict=True):
        result = network_tournament(network, args.games, args.seed)
        shares = tournament_deal_shares(result)
        print(_row(network, shares, first, width=width), flush=True)
        first = shares if first is None else first
        if csv_path is not None:
            write_atomic(csv_path, render_games_csv(result))
    if args.games_csv_dir is not None:
        print(f"games: {', '.join(str(path) for path in csv_paths)}")
    return 0


def _games_text(asked: int, players: int) -> str:
    """``"4002 games (asked 4000, rounded up to whole deal groups)"``, or ``"4000 games"``
    when ``asked`` fills whole groups of ``players`` seat rotations."""
    from agents.evaluation.games import deal_groups, rounding_note

    played = deal_groups(asked, players) * players
    return f"{played} games{rounding_note(asked, played)}"


def _games_csv_paths(networks: list[Path], folder: Path | None) -> list[Path | None]:
    """Where ``networks``' games go with ``--games-csv-dir``: ``folder/<N>-<stem>.games.csv``
    (N from 1, so two ``best.zip`` of different runs do not collide). The folder is made
    and checked before any game is played; each file is written whole once its network's
    games are played.

    Raises:
        OSError: The folder cannot be made or written to.
    """
    if folder is None:
        return [None] * len(networks)
    folder.mkdir(parents=True, exist_ok=True)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "not writable", str(folder))
    return [folder / f"{n}-{network.stem}.games.csv" for n, network in enumerate(networks, 1)]


def compare_curves(args: argparse.Namespace) -> int:
    """``skyjo-compare curves``: print each run's first, best and last win rates, and with
    ``--out`` write the chart."""
    from agents.evaluation.report import write_atomic

    try:
        runs = {str(run): read_eval_log(run) for run in args.runs}
    except EvalLogError as error:
        return _fail(str(error), EXIT_USAGE)
    width = _name_width(f"{run}, {opponent}" for run, evaluations in runs.items()
                        for e in evaluations for opponent in e.win_rates)
    print(f"{'run, opponent':<{width}} {'first':>7} {'best':>7} {'last':>7}  best at")
    for run, evaluations in runs.items():
        for opponent in sorted({name for e in evaluations for name in e.win_rates}):
            logged = [e for e in evaluations if opponent in e.win_rates]
            best = max(logged, key=lambda e: e.win_rates[opponent][0])
            rates = [e.win_rates[opponent][0] for e in (logged[0], best, logged[-1])]
            where = f"{best.timesteps:,} steps" + (f" ({best.stage})" if best.stage else "")
            print(f"{f'{run}, {opponent}':<{width}} "
                  + " ".join(f"{rate:>7.1%}" for rate in rates) + f"  {where}")
    if args.out is not None:
        players = {_run_players(run) for run in args.runs}
        parity = 1 / players.pop() if len(players) == 1 and None not in players else None
        try:
            write_atomic(args.out, render_curves(runs, parity=parity))
        except OSError as error:
            return _fail(f"cannot write {args.out}: {error}", EXIT_USAGE)
        print(f"chart written to {args.out}")
    return 0


def _run_players(run: Path) -> int | None:
    """The table size of a run directory's ``config.yaml`` (for the chart's even-share
    line), or None where there is none or it cannot be read."""
    from skyjo_env.core.safe_yaml import YamlFileError, load_yaml_file

    config = run / "config.yaml" if run.is_dir() else run.parent / "config.yaml"
    if not config.is_file():
        return None
    try:
        players = load_yaml_file(config, "run config").get("num_players")
    except (YamlFileError, AttributeError):
        return None
    return players if isinstance(players, int) and 2 <= players <= 8 else None


@quiet_on_closed_stdout
def main(argv: Sequence[str] | None = None) -> int:
    """Run ``skyjo-compare``.

    Args:
        argv: Arguments without the program name (default ``sys.argv[1:]``).

    Returns:
        The exit status: 0 on success, 2 for a bad input (one line on stderr), 130 on
        Ctrl-C, 141 (quietly) when standard output's reader closed the pipe (``| head``).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse has printed its message already
        return int(exit_.code or 0)
    try:
        command = {"runs": compare_runs, "networks": compare_networks,
                   "curves": compare_curves}[args.command]
        return command(args)
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)


if __name__ == "__main__":
    sys.exit(main())
