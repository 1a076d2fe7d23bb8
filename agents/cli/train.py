"""Command line of `train.py` / ``skyjo-train``: parse, load the config, call `agents.ppo.training.train`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agents.ppo.checkpoint import CheckpointError
from agents.ppo.config import load_train_config
from agents.ppo.training import train

DEFAULT_RUN_DIR = "runs/default"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser."""
    parser = argparse.ArgumentParser(
        prog="train.py",
        description="Train a Skyjo agent with MaskablePPO and self-play. "
        "Watch it with: tensorboard --logdir RUN_DIR/tb",
    )
    parser.add_argument("--config", help="YAML training config (default: built-in defaults)")
    parser.add_argument("--seed", type=int, help="master seed (overrides the config)")
    parser.add_argument("--total-timesteps", type=int, help="learner decisions to train for")
    parser.add_argument("--run-dir", help=f"output directory (default: {DEFAULT_RUN_DIR})")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --run-dir from its last checkpoint (uses its config.yaml "
        "unless --config is given)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    run_dir = Path(args.run_dir or DEFAULT_RUN_DIR)
    config_path = args.config
    if args.resume:
        if not (run_dir / "checkpoints" / "last.zip").is_file():
            print(f"error: nothing to resume: {run_dir}/checkpoints/last.zip does not exist",
                  file=sys.stderr)
            return 2
        if config_path is None:
            config_path = run_dir / "config.yaml"
    elif (run_dir / "checkpoints" / "last.zip").is_file():
        print(
            f"error: {run_dir} already holds a run; pass --resume to continue it or choose "
            "another --run-dir",
            file=sys.stderr,
        )
        return 2
    try:
        config = load_train_config(
            config_path,
            seed=args.seed,
            total_timesteps=args.total_timesteps,
            progress=False if args.no_progress else None,
        )
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        summary = train(config, run_dir, resume=args.resume)
    except CheckpointError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    state = "stopped early" if summary["interrupted"] else "finished"
    print(
        f"training {state} at {summary['timesteps']:,} steps "
        f"({summary['steps_per_second']:,.0f} steps/s); "
        f"last checkpoint {summary['last_checkpoint']}, best {summary['best_checkpoint']} "
        f"(score {summary['best_score']:.3f})"
    )
    opponents = " ".join(["ev"] * (config.num_players - 1))
    print(
        f"evaluate it: python evaluate.py --agents ppo:{summary['best_checkpoint']} {opponents} "
        "--games 1000"
    )
    return 130 if summary["interrupted"] else 0


if __name__ == "__main__":
    sys.exit(main())
