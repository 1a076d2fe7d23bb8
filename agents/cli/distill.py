"""Command line of ``skyjo-distill``: expert iteration on a saved network
(`agents.training.expert.distill_checkpoint`, step after step)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from agents.cli import EXIT_INTERRUPTED, interrupts_kept_from_finalizers, quiet_on_closed_stdout
from agents.ppo.checkpoint import CheckpointError, read_metadata
from agents.registry import AgentSpecError, search_settings
from agents.training.config import TrainConfig
from agents.training.imitation import DataWorkersError, chunk_sizes

PROG = "skyjo-distill"
#: Weight of the outcomes in ``--critic-only``'s targets when ``--value-mix`` is not given.
DEFAULT_VALUE_MIX = 0.5


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (defaults from `TrainConfig`'s expert-iteration fields)."""
    defaults = TrainConfig()
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Expert iteration on a saved network: the search over it plays "
        "self-play games, the network is fitted to the searched moves (and its critic to "
        "the outcomes), and the result is saved; repeated --steps times, each step "
        "searching over the previous step's network.",
    )
    parser.add_argument("--checkpoint", required=True, type=Path,
                        help="the network to start from (a skyjo-rl checkpoint)")
    parser.add_argument("--out", required=True, type=Path,
                        help="where the last step's network goes; step k of N < last is "
                        "written beside it as OUT_stepK.zip")
    parser.add_argument("--steps", type=int, default=1, help="expert-iteration steps (default 1)")
    parser.add_argument("--games", type=int, default=defaults.expert_games,
                        help=f"self-play games per step (default {defaults.expert_games})")
    parser.add_argument("--search", default=defaults.expert_search,
                        help=f"search without its base (default {defaults.expert_search})")
    parser.add_argument("--seed", type=int, default=0, help="master seed (default 0)")
    parser.add_argument("--epochs", type=int, default=defaults.expert_epochs)
    parser.add_argument("--learning-rate", type=float, default=defaults.expert_learning_rate)
    parser.add_argument("--anchor", type=float,
                        help="weight of the network's own probabilities in the searched "
                        f"moves' targets (default {defaults.expert_anchor}; not with "
                        "--soft-temperature)")
    parser.add_argument("--soft-temperature", type=float, metavar="T",
                        help="fit soft targets instead of the searched moves: the network's "
                        "probabilities times exp(advantage / T), from the search's action "
                        "values (0.03 measured best)")
    parser.add_argument("--value-fit", action="store_true",
                        help="fit the critic to the games' outcomes too (off: it spoiled "
                        "the critic as the next step's search leaf)")
    parser.add_argument("--critic-only", action="store_true",
                        help="keep the actor and fit the critic alone, to a mix of the games' "
                        "outcomes and the search's own value of each move it played: a value "
                        "function of the searching policy for the leaves of leaf=critic "
                        "(search:ppo:OUT, or search(critic=OUT):ppo:CHECKPOINT)")
    parser.add_argument("--value-mix", type=float, default=None, metavar="M",
                        help="with --critic-only, the weight of the outcomes in the targets, "
                        "the search's estimates taking 1 - M (default 0.5)")
    parser.add_argument("--workers", type=int, default=0,
                        help="Ray workers for the games (0: in this process)")
    parser.add_argument("--ray-address", help="Ray cluster to join (with --workers)")
    parser.add_argument("--keep-games", action="store_true",
                        help="also save each step's search games beside its network "
                        "(OUT.games.npz; OUT_stepK.games.npz), to refit without searching")
    parser.add_argument("--games-from", type=Path, metavar="GAMES.npz",
                        help="fit to games saved by --keep-games instead of searching (one "
                        "step; --search and --games are then the file's)")
    parser.add_argument("--research", action="store_true",
                        help="with --games-from: search the file's decisions again with "
                        "--search over --checkpoint (e.g. search(critic=CRITIC.zip)) and fit "
                        "to that search's moves and values; the outcomes stay the games'")
    parser.add_argument("--no-progress", action="store_true",
                        help="hide the search games' progress (a bar on a terminal; off one, "
                        "as under nohup, a line a minute on stderr)")
    return parser


def _check(args: argparse.Namespace) -> None:
    """One-line `ValueError` for a bad argument."""
    if not args.checkpoint.is_file():
        raise ValueError(f"--checkpoint {str(args.checkpoint)!r} is not a file")
    for name in ("steps", "games", "epochs"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.seed < 0 or args.workers < 0:
        raise ValueError("--seed and --workers must be >= 0")
    if not args.learning_rate > 0:
        raise ValueError(f"--learning-rate must be > 0, got {args.learning_rate}")
    if args.anchor is not None and not 0 <= args.anchor < 1:
        raise ValueError(f"--anchor must be in [0, 1), got {args.anchor}")
    if args.soft_temperature is not None:
        if not args.soft_temperature > 0:
            raise ValueError(f"--soft-temperature must be > 0, got {args.soft_temperature}")
        if args.anchor is not None:
            raise ValueError("--anchor mixes the network into the searched moves' targets; "
                             "soft targets (--soft-temperature) hold it already")
    if args.critic_only:
        if args.soft_temperature is not None or args.anchor is not None or args.value_fit:
            raise ValueError("--critic-only fits the critic alone: --soft-temperature, "
                             "--anchor and --value-fit are fits of the actor")
        if args.value_mix is not None and not 0 <= args.value_mix <= 1:
            raise ValueError(f"--value-mix must be in [0, 1], got {args.value_mix}")
    elif args.value_mix is not None:
        raise ValueError("--value-mix applies only with --critic-only")
    if args.ray_address is not None and args.workers == 0:
        raise ValueError("--ray-address needs --workers >= 1")
    if args.out.suffix != ".zip":
        raise ValueError(f"--out {str(args.out)!r} must end in .zip")
    read_metadata(args.checkpoint)  # a bad checkpoint is refused before minutes of search
    source = args.checkpoint.resolve()
    for target in step_paths(args.out, args.steps):
        if target.resolve() == source:
            raise ValueError(f"--out: step network {str(target)!r} would overwrite --checkpoint "
                             f"{str(args.checkpoint)!r}; write it elsewhere")
    search_settings(args.search)
    if args.games_from is not None:
        if args.steps != 1:
            raise ValueError("--games-from fits one step (the games were searched over one "
                             f"network), got --steps {args.steps}")
        if not args.games_from.is_file():
            raise ValueError(f"--games-from {str(args.games_from)!r} is not a file")
    elif args.research:
        raise ValueError("--research searches the decisions of saved games again: it needs "
                         "--games-from")


def _fit_summary(stats: dict[str, float], args: argparse.Namespace) -> str:
    """What a step's fit did, in one line's words."""
    if args.critic_only:
        return (f"{stats['decisions']:,.0f} decisions, the critic's squared error to the "
                f"targets {stats['value_loss_before']:.4g} before the fit, "
                f"{stats['value_loss']:.4g} in its last pass")
    soft = ("" if args.soft_temperature is None else
            f" ({stats['fitted']:,.0f} searched ones fitted to soft targets)")
    return (f"{stats['decisions']:,.0f} decisions{soft}, the network played the searched "
            f"move {stats['agreement_before']:.1%} before the fit, "
            f"{stats['agreement_after']:.1%} after")


def _announce(args: argparse.Namespace, step: int, source: Path) -> tuple[int, str, int]:
    """Print what the step does; returns the progress's total, unit and in-flight count
    (see `agents.evaluation.games.ProgressLines`)."""
    if args.games_from is None:
        print(f"step {step}/{args.steps}: {args.games} games of {args.search} over {source}",
              flush=True)
        return args.games, "games", parallel_games(args)
    if args.research:
        from agents.training.expert import RESEARCH_CHUNK_ROWS, searched_rows  # lazily

        rows = searched_rows(args.games_from)
        print(f"step {step}/{args.steps}: searching the {rows:,} decisions of {args.games_from} "
              f"again with {args.search} over {source}, then fitting", flush=True)
        return rows, "decisions", sum(chunk_sizes(rows, RESEARCH_CHUNK_ROWS)[:args.workers])
    print(f"step {step}/{args.steps}: fitting {source} to the games in {args.games_from}",
          flush=True)
    return args.games, "games", 0


def games_path(network: Path) -> Path:
    """Where ``--keep-games`` saves the games of the step that wrote ``network``."""
    return network.with_suffix(".games.npz")


def parallel_games(args: argparse.Namespace) -> int:
    """Search games played at once: the games of the first ``--workers`` chunks (Ray
    tasks start together), or 0 when the chunks run one after another here."""
    from agents.training.expert import EXPERT_CHUNK_GAMES  # lazily, as main imports expert

    return sum(chunk_sizes(args.games, EXPERT_CHUNK_GAMES)[:args.workers])


def step_paths(out: Path, steps: int) -> list[Path]:
    """Where each step's network goes: ``OUT_step1.zip`` ... and ``OUT`` for the last."""
    return [out.with_name(f"{out.stem}_step{k}.zip") for k in range(1, steps)] + [out]


def evaluate_command(network: Path) -> str:
    """The ``evaluate.py`` command that plays ``network`` against ``ev`` in every other
    seat of the rules it was trained for."""
    opponents = " ".join(["ev"] * (read_metadata(network)["rules"]["num_players"] - 1))
    return f"python evaluate.py --agents ppo:{network} {opponents} --games 2000"


@quiet_on_closed_stdout
@interrupts_kept_from_finalizers()
def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (2: bad input, 130: Ctrl-C)."""
    import torch

    from agents.evaluation.games import progress_bar
    from agents.training.expert import distill_checkpoint
    from agents.training.seeds import derived_seed

    args = build_parser().parse_args(argv)
    torch.set_num_threads(1)
    source = args.checkpoint
    written: list[Path] = []
    try:
        _check(args)
        anchor = (TrainConfig.model_fields["expert_anchor"].default if args.anchor is None
                  else args.anchor)
        value_mix = DEFAULT_VALUE_MIX if args.value_mix is None else args.value_mix
        for step, target in enumerate(step_paths(args.out, args.steps), start=1):
            started = time.perf_counter()
            searching = args.games_from is None or args.research
            total, unit, in_flight = _announce(args, step, source)
            quiet = args.no_progress or not searching
            with progress_bar(total, False if quiet else None, in_flight=in_flight,
                              unit=unit) as bar:
                stats = distill_checkpoint(
                    source, target, args.search, args.games, seed=derived_seed(args.seed, step),
                    epochs=args.epochs, learning_rate=args.learning_rate, anchor=anchor,
                    workers=args.workers, ray_address=args.ray_address,
                    value_fit=args.value_fit, on_games_done=bar.update,
                    games_out=games_path(target) if args.keep_games else None,
                    games_in=args.games_from, soft_temperature=args.soft_temperature,
                    critic_only=args.critic_only, value_mix=value_mix,
                    research=args.research,
                )
            print(f"step {step}/{args.steps}: {_fit_summary(stats, args)}; wrote {target} in "
                  f"{time.perf_counter() - started:.0f} s", flush=True)
            source = target
            written.append(target)
    except (ValueError, CheckpointError, AgentSpecError, DataWorkersError) as error:
        print(f"{PROG}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        done = f"the last finished step is {written[-1]}" if written else "no step finished"
        print(f"{PROG}: interrupted; {done}", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"evaluate it: {evaluate_command(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
