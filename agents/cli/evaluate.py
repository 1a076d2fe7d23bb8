"""Command line of ``evaluate.py`` / ``skyjo-evaluate``: a tournament between agents.

Example::

    python evaluate.py --agents ev greedy --games 1000 --seed 0 --json report.json

One agent spec per seat (2 or more, as many as the deck allows; the number of players
follows). Every input is checked before the first game: a bad spec (including an agent
whose ``act`` cannot take ``(observations, action_masks)``), rules preset, checkpoint,
seed, seating, game count (at most `agents.evaluation.games.max_games`, which bounds the
memory of the records) or output directory ends the run with a one-line message on
stderr and exit status 2, and no output file is written. An agent that fails during play
(its ``act`` raises, or returns an illegal or malformed action) ends it with a one-line
message naming the agent and exit status 1; Ctrl-C ends it with exit status 130. No
traceback is printed for any of these.

``--workers N`` (a local Ray with N CPUs, started on demand and shut down afterwards) or
``--ray-address HOST:PORT`` (an existing cluster) shard the deal groups over Ray tasks
(`agents.evaluation.distributed`); Ray is imported only then. Without Ray installed, or
with an unreachable address, the run ends with a one-line message and exit status 2.
``--resume DIR`` keeps each finished chunk in DIR (`agents.evaluation.resume`): the same
command run again after a stop (Ctrl-C, a kill, a lost machine) plays only the missing
chunks; a DIR of another tournament, of other files, or with a damaged or edited file (each
file carries a SHA-256) is a one-line error naming the file, exit status 2, and nothing in
DIR is changed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from agents.cli import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    interrupts_kept_from_finalizers,
    quiet_on_closed_stdout,
    sigterm_as_ctrl_c,
    silence_closed_stdout,
)
from agents.evaluation.distributed import (
    DEFAULT_CHUNK_DEALS,
    MIN_CHUNKS,
    evaluate_agents_distributed,
)
from agents.evaluation.games import (
    MAX_ALL_SEATING_PLAYERS,
    MAX_RECORDS_BYTES,
    SEATINGS,
    AgentActionError,
    agent_seed,
    check_seating,
    display_names,
    max_games,
    set_torch_threads,
)
from agents.evaluation.replays import REPLAY_SELECTIONS, ReplayRecorder
from agents.evaluation.report import format_table, write_reports
from agents.evaluation.resume import ResumeError
from agents.evaluation.tournament import play_tournament
from agents.parallel import DistributedRunError, DistributedSetupError
from agents.registry import VALID_FORMS, AgentSpecError, make_agent
from skyjo_env.core.errors import one_line
from skyjo_env.core.rules import load_rules

PROG = "evaluate"
EXIT_USAGE = 2
EXIT_RUNTIME = 1


class UsageError(ValueError):
    """A bad command-line input, reported in one line with exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the evaluation command."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Play a tournament between agents over duplicated, seat-rotated deals and report "
            "win rates with 95%% intervals, score statistics and OpenSkill ratings."
        ),
    )
    parser.add_argument(
        "--agents",
        nargs="+",
        required=True,
        metavar="SPEC",
        help=("one agent per seat, 2 or more (more than 8 while the deck holds players * rows "
              f"* cols + 2 cards: up to 12 with the official deck): {VALID_FORMS}"),
    )
    parser.add_argument(
        "--games",
        type=int,
        default=1000,
        help="games to play, rounded up to whole deal groups: a multiple of the number of "
        "agents P (P! with --seating all) (default 1000)",
    )
    parser.add_argument("--seed", type=int, default=0, help="master seed (default 0)")
    parser.add_argument(
        "--seating",
        choices=SEATINGS,
        default="cyclic",
        help="how each deal seats the agents: cyclic (the P rotations; with 3+ agents each "
        "keeps the same predecessor, whose discards it draws) or all (all P! orders, so every "
        f"agent follows every other equally often; up to {MAX_ALL_SEATING_PLAYERS} agents) "
        "(default cyclic)",
    )
    parser.add_argument(
        "--rules",
        default="official",
        metavar="PRESET|PATH",
        help="rules preset name or YAML file (default official); num_players is set to the "
        "number of agents",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the JSON report here")
    parser.add_argument("--csv", type=Path, metavar="PATH", help="write the per-agent CSV here")
    parser.add_argument(
        "--plot", type=Path, metavar="PNG", help="write a win-rate bar chart (PNG) here"
    )
    parser.add_argument(
        "--games-csv",
        type=Path,
        metavar="PATH",
        help="write one CSV row per game here (deal, rotation, each agent's total and win "
        "share): to pair runs on the same deals (skyjo-compare runs A.csv B.csv)",
    )
    parser.add_argument(
        "--replays",
        type=Path,
        metavar="DIR",
        help="write the move log of chosen games into DIR (made if missing), one "
        "game-NNNNNN.json each, for skyjo-web's Watch view (agents.evaluation.replays)",
    )
    parser.add_argument(
        "--replay-games", type=int, default=10, metavar="N",
        help="how many games --replays writes (default 10)",
    )
    parser.add_argument(
        "--replay-select", choices=REPLAY_SELECTIONS, default="first",
        help="which games --replays writes: the first N (first) or the first N to end that "
        "the first agent did not win (lost) (default first)",
    )
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="hide the progress (a bar on a terminal; off one, as under nohup, a line a "
        "minute on stderr)",
    )
    parser.add_argument(
        "--no-ratings", action="store_true", help="skip the OpenSkill ratings (faster)"
    )
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        metavar="N",
        help="torch intra-op threads for ppo agents (default 1: small networks gain nothing "
        "from more, and two threads on two busy cores slow down manyfold)",
    )
    distributed = parser.add_argument_group(
        "distributed (Ray; pip install -e \".[distributed]\")",
        "Shard the deal groups over Ray tasks, in chunks of a fixed number of deal groups. "
        "The report is the same with any number of workers; for agents without randomness "
        "of their own (ev, greedy, a deterministic ppo:PATH) it also equals the report "
        "without Ray, while agents that sample (random) are seeded per chunk, so their "
        "games differ from the single-process run. A ppo:PATH must be readable at PATH on "
        "every node, and the project installed on every node.",
    )
    distributed.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="start a local Ray with N CPUs (unless one is running) and play N chunks at "
        "once; with --ray-address, play at most N chunks at once",
    )
    distributed.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="connect to an existing Ray cluster (the address 'ray start --head' prints)",
    )
    distributed.add_argument(
        "--chunk-deals",
        type=int,
        metavar="D",
        help=f"deal groups per Ray task (default: the deals in {MIN_CHUNKS} chunks of at "
        f"most {DEFAULT_CHUNK_DEALS}); it fixes the random agents' streams, so keep it to "
        "reproduce a report",
    )
    distributed.add_argument(
        "--resume",
        type=Path,
        metavar="DIR",
        help="keep every finished chunk in DIR (made if missing); the same command run "
        "again after a stop plays only the chunks not there yet, and reports as if never "
        "stopped. A DIR of another tournament (other agents, checkpoints, rules, games, "
        "seed or chunk size) is refused; the code is not checked, so resume with the same "
        "checkout",
    )
    return parser


def _check_output(option: str, path: Path | None) -> None:
    if path is None:
        return
    if path.is_dir():
        raise UsageError(f"{option} {str(path)!r} is a directory, not a file")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{option}: directory {str(parent)!r} does not exist")


def _is_distributed(args: argparse.Namespace) -> bool:
    return args.workers is not None or args.ray_address is not None


def _check_distributed(args: argparse.Namespace) -> None:
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    if args.chunk_deals is not None:
        if args.chunk_deals < 1:
            raise UsageError(f"--chunk-deals must be >= 1, got {args.chunk_deals}")
        if not _is_distributed(args):
            raise UsageError("--chunk-deals applies only with --workers or --ray-address")
    # a file given as DIR, or a missing parent, is `ChunkStore`'s ResumeError (exit 2 too)
    if args.resume is not None and not _is_distributed(args):
        raise UsageError("--resume applies only with --workers or --ray-address (the "
                         "games are kept chunk by chunk)")
    if args.ray_address is not None and not args.ray_address.strip():
        raise UsageError("--ray-address is empty; give HOST:PORT")
    if args.replays is not None and _is_distributed(args):
        raise UsageError("--replays applies only without --workers or --ray-address")


def _check_replays(args: argparse.Namespace) -> None:
    if args.replay_games < 1:
        raise UsageError(f"--replay-games must be >= 1, got {args.replay_games}")
    if args.replays is not None and args.replays.exists() and not args.replays.is_dir():
        raise UsageError(f"--replays {str(args.replays)!r} is a file, not a directory")


def _prepare(args: argparse.Namespace):
    """Validate the inputs and build rules and agents; raises UsageError."""
    count = len(args.agents)
    if count < 2:
        raise UsageError(f"--agents needs at least 2 agent specs, got {count}")
    if args.games < 1:
        raise UsageError(f"--games must be >= 1, got {args.games}")
    try:
        check_seating(args.seating, count)
    except ValueError as error:
        raise UsageError(f"--seating: {error}") from error
    limit = max_games(count, args.seating)
    if args.games > limit:
        raise UsageError(
            f"--games {args.games} is too many for {count} agents: at most {limit} (the "
            f"per-game records are capped at {MAX_RECORDS_BYTES / 2**30:g} GiB); split the "
            "run over several seeds"
        )
    if args.seed < 0:
        raise UsageError(f"--seed must be >= 0, got {args.seed}")
    if args.torch_threads < 1:
        raise UsageError(f"--torch-threads must be >= 1, got {args.torch_threads}")
    _check_distributed(args)
    _check_replays(args)
    for option, path in (("--json", args.json), ("--csv", args.csv), ("--plot", args.plot),
                         ("--games-csv", args.games_csv)):
        _check_output(option, path)
    try:
        # the seat count overrides the file's before validation (a deck check depends on it)
        rules = load_rules(args.rules, num_players=count)
    except (ValueError, TypeError, OSError) as error:
        raise UsageError(f"--rules {args.rules!r}: {error}") from error
    agents = []
    for index, spec in enumerate(args.agents):
        try:
            agents.append(make_agent(spec, rules, agent_seed(args.seed, index)))
        except ValueError as error:
            raise UsageError(str(error)) from error
    set_torch_threads(args.torch_threads)
    return rules, agents


def _fail(message: str, status: int) -> int:
    first_line = " ".join(str(message).split())
    print(f"{PROG}: error: {first_line}", file=sys.stderr)
    return status


@quiet_on_closed_stdout
def main(argv: Sequence[str] | None = None) -> int:
    """Run the evaluation command.

    Args:
        argv: Arguments without the program name (default ``sys.argv[1:]``).

    Returns:
        The exit status: 0 on success, 2 for a bad input (nothing written), 1 when an agent
        fails during play (nothing written), 130 on Ctrl-C or SIGTERM, 141 (quietly, the reports
        written) when standard output's reader closed the pipe (``| head``).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse has printed its message already
        return int(exit_.code or 0)
    try:
        with sigterm_as_ctrl_c(), interrupts_kept_from_finalizers():
            return _run(args)
    except KeyboardInterrupt:
        return _fail(_interrupted_message(args), EXIT_INTERRUPTED)


def _interrupted_message(args: argparse.Namespace) -> str:
    """What a Ctrl-C or SIGTERM left: with ``--resume``, where the finished chunks are and
    that the same command goes on from them."""
    if args.resume is None:
        return "interrupted"
    return (f"interrupted; the chunks finished so far stay in {args.resume}: the same "
            "command plays the rest")


def _run(args: argparse.Namespace) -> int:
    try:
        rules, agents = _prepare(args)
    except UsageError as error:
        return _fail(str(error), EXIT_USAGE)
    progress = False if args.no_progress else None
    try:
        if _is_distributed(args):
            result = evaluate_agents_distributed(
                args.agents,
                rules,
                args.games,
                args.seed,
                workers=args.workers,
                address=args.ray_address,
                chunk_deals=args.chunk_deals,
                progress=progress,
                ratings=not args.no_ratings,
                resume=args.resume,
                seating=args.seating,
            )
        else:
            recorder = _recorder(args, rules, agents)
            result = play_tournament(
                agents,
                rules,
                args.games,
                args.seed,
                specs=args.agents,
                progress=progress,
                ratings=not args.no_ratings,
                seating=args.seating,
                recorder=recorder,
            )
    # e.g. a checkpoint path a node lacks, or a --resume DIR of another tournament
    except (DistributedSetupError, AgentSpecError, ResumeError) as error:
        return _fail(str(error), EXIT_USAGE)
    except (AgentActionError, DistributedRunError) as error:
        return _fail(str(error), EXIT_RUNTIME)
    except (ValueError, MemoryError) as error:  # anything _prepare could not foresee
        return _fail(one_line(error), EXIT_RUNTIME)
    stdout_closed = False
    try:
        print(format_table(result), flush=True)
    except BrokenPipeError:  # `| head` has read its lines: the reports are still written
        silence_closed_stdout()
        stdout_closed = True
    try:
        written = write_reports(
            result, json_path=args.json, csv_path=args.csv, plot_path=args.plot,
            games_csv_path=args.games_csv,
        )
    except OSError as error:
        return _fail(f"cannot write the report: {error}", EXIT_RUNTIME)
    for path in written:
        print(f"wrote {path}")
    if args.replays is not None and not _is_distributed(args):
        print(f"wrote {len(recorder.written)} replays into {args.replays}")
    return EXIT_BROKEN_PIPE if stdout_closed else 0


def _recorder(args: argparse.Namespace, rules, agents) -> ReplayRecorder | None:
    """The replay recorder that ``--replays`` asks for, or None."""
    if args.replays is None:
        return None
    names = display_names([agent.name for agent in agents])
    return ReplayRecorder(args.replays, args.replay_games, args.replay_select, rules,
                          args.seed, names, list(args.agents), seating=args.seating)


if __name__ == "__main__":
    sys.exit(main())
