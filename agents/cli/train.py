"""Command line of `train.py` / ``skyjo-train``: parse, load the config, check the start
once (`agents.training.start.prepare_start`), call `agents.training.trainer.run_training`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agents.cli import EXIT_INTERRUPTED, interrupts_kept_from_finalizers, quiet_on_closed_stdout
from agents.ppo.checkpoint import CheckpointError
from agents.registry import AgentSpecError
from agents.training.config import TrainConfigError, load_train_config
from agents.training.from_stage import check_stage_start, describe, seed_run_dir
from agents.training.start import prepare_start
from agents.training.trainer import run_training
from agents.training.warm_start import WarmStartInterrupted

DEFAULT_RUN_DIR = "runs/default"
#: The recipes of the strongest agents, one per table size (``{players}``).
RECIPE = "configs/recipes/{players}p.yaml"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser."""
    parser = argparse.ArgumentParser(
        prog="train.py",
        description="Train a Skyjo agent with MaskablePPO and self-play. "
        "Watch it with: tensorboard --logdir RUN_DIR/tb",
        epilog="The strongest agent for a table of N players (2 to 8) trains from scratch "
        f"with its recipe, a config of stages (about 2 hours on 2 cores): python train.py "
        f"--config {RECIPE.format(players='N')} --run-dir runs/recipe_Np. A config may "
        "say 'extends: OTHER.yaml' (relative to itself) and change a few keys, and "
        "'stages:' (a list of key changes, run one after the other in one run directory); "
        "see docs/training.md.",
    )
    parser.add_argument(
        "--config",
        help="YAML training config (default: built-in defaults), e.g. configs/strong_2p.yaml "
        f"or a recipe, {RECIPE.format(players=4)}",
    )
    parser.add_argument(
        "--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
        help="change one config key after the file is read (repeatable); VALUE is YAML "
        "(3e-4, [256, 256], null); dotted keys reach into a mapping (opponent_mix.ev=0.5) "
        "or a stage, by name or number (stages.finetune.total_timesteps=2000000)",
    )
    parser.add_argument("--seed", type=int, help="master seed (overrides the config)")
    parser.add_argument(
        "--total-timesteps", type=int,
        help="learner decisions to train for (with stages: those of each stage that sets none; "
        "one stage's with --set stages.NAME.total_timesteps=N)",
    )
    parser.add_argument("--run-dir", help=f"output directory (default: {DEFAULT_RUN_DIR})")
    parser.add_argument(
        "--init-from", metavar="CHECKPOINT",
        help="start from a saved network's weights instead of the imitation warm start "
        "(e.g. models/ppo_2p.zip with configs/strong_2p.yaml; overrides the config's "
        "init_from)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --run-dir from its last checkpoint (uses its config.yaml "
        "unless --config is given)",
    )
    parser.add_argument(
        "--from-stage", metavar="CHECKPOINT",
        help="start a new run of --config where a stage of an earlier run ended "
        "(RUN_DIR/checkpoints/stage_N.zip, which every staged run keeps): its first N "
        "stages must be that run's, and the run goes on as that run resumed there would "
        "with this config's later stages (the same steps as this config from scratch); "
        "--run-dir must be new",
    )
    parser.add_argument(
        "--no-progress", action="store_true",
        help="no progress bar: its evaluation, stage and checkpoint lines are printed a "
        "line each instead (for a log file)")
    return parser


@quiet_on_closed_stdout
def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    run_dir = Path(args.run_dir or DEFAULT_RUN_DIR)
    config_path = args.config
    if args.from_stage is not None:
        problem = _from_stage_conflict(args)
        if problem:
            parser.error(problem)
    if args.resume:
        if not (run_dir / "checkpoints" / "last.zip").is_file():
            print(f"error: nothing to resume: {run_dir}/checkpoints/last.zip does not exist",
                  file=sys.stderr)
            return 2
        if config_path is None:
            config_path = run_dir / "config.yaml"
    try:
        config = load_train_config(
            config_path,
            args.settings,
            seed=args.seed,
            total_timesteps=args.total_timesteps,
            init_from=args.init_from,
            progress=False if args.no_progress else None,
        )
    except (TrainConfigError, AgentSpecError, CheckpointError) as error:  # before the run dir
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not args.resume and (run_dir / "checkpoints" / "last.zip").is_file():
        print(
            f"error: {run_dir} already holds a run; pass --resume to continue it or choose "
            "another --run-dir",
            file=sys.stderr,
        )
        return 2
    try:
        # every other config mistake surfaces here, before any training work starts
        start = prepare_start(config, resume=args.resume or args.from_stage is not None)
        if args.from_stage is not None:
            stage_start = check_stage_start(args.from_stage, config)
            seed_run_dir(stage_start, run_dir)
            print(describe(stage_start), flush=True)
        # the second Ctrl-C (stop at once) may land inside Ray's or llvmlite's __del__
        with interrupts_kept_from_finalizers():
            summary = run_training(start, run_dir, log_lines=args.no_progress)
    except WarmStartInterrupted as error:  # a polite stop before the first checkpoint
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (TrainConfigError, AgentSpecError, CheckpointError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # one the trainer did not turn into a clean stop
        print(
            f"error: interrupted before training finished; {_saved_files_line(run_dir)}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    _print_summary(summary, config.num_players)
    if not config.stages and not summary["interrupted"]:
        print(_recipe_hint(config.num_players))
    return EXIT_INTERRUPTED if summary["interrupted"] else 0


def _from_stage_conflict(args: argparse.Namespace) -> str | None:
    """What --from-stage cannot go with, or None."""
    if args.resume:
        return "--from-stage starts a new run; --resume continues one: pass one of them"
    if args.init_from is not None:
        return "--from-stage starts from a stage's end, not from --init-from: pass one of them"
    if args.config is None:
        return "--from-stage needs --config: the config whose first stages the run continues"
    return None


def _saved_files_line(run_dir: Path) -> str:
    last = run_dir / "checkpoints" / "last.zip"
    if last.is_file():
        return f"the last checkpoint is {last} (continue with --resume --run-dir {run_dir})"
    return f"no checkpoint was written to {run_dir}"


def _recipe_hint(num_players: int) -> str:
    """The closing line of a run without stages: how to train the strongest agent."""
    players = num_players if 2 <= num_players <= 8 else 2
    recipe = RECIPE.format(players=players)
    return (f"the strongest {players}-player agent trains from scratch with its recipe "
            f"(stages, about 2 hours on 2 cores): python train.py --config {recipe} "
            f"--run-dir runs/recipe_{players}p")


def _print_summary(summary: dict, num_players: int) -> None:
    """The closing lines; they name only checkpoints that exist (a run stopped before its
    first evaluation has no best.zip)."""
    state = "stopped early" if summary["interrupted"] else "finished"
    last, best = Path(summary["last_checkpoint"]), Path(summary["best_checkpoint"])
    saved = []
    if last.is_file():
        saved.append(f"last checkpoint {last}")
    if best.is_file():
        # picked as the best of many evaluations on the same deals, so its score flatters it
        saved.append(f"best {best} (score {summary['best_score']:.3f} on the deals it was "
                     "picked on)")
    else:
        saved.append("no best.zip (no evaluation finished)")
    print(
        f"training {state} at {summary['timesteps']:,} steps "
        f"({summary['steps_per_second']:,.0f} steps/s); {', '.join(saved)}"
    )
    to_evaluate = best if best.is_file() else last if last.is_file() else None
    if to_evaluate is not None:
        opponents = " ".join(["ev"] * (num_players - 1))
        print(
            f"evaluate it on fresh deals: python evaluate.py --agents ppo:{to_evaluate} "
            f"{opponents} --games 1000"
        )


if __name__ == "__main__":
    sys.exit(main())
