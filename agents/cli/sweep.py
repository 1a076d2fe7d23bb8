"""Command line ``skyjo-sweep``: an Optuna search over training configs.

Example::

    skyjo-sweep --space configs/sweeps/ppo_2p.yaml --trials 40 --workers 4 --seed 0

Each trial is a training run in ``SWEEP_DIR/trial_NNNN/`` (TensorBoard in its ``tb/``); the
sweep ends with a summary table, ``SWEEP_DIR/summary.json`` and
``SWEEP_DIR/best_config.yaml`` (for ``train.py --config``); see `agents.sweep.runner`.
A bad space file, unknown config key, bad distribution, count or used sweep directory ends
it with a one-line message and exit status 2 before any trial; Ctrl-C prints the summary of
the finished trials and exits 130, and ``--resume`` (same ``--space``, ``--sweep-dir`` and
``--seed``) continues the sweep up to ``--trials`` trials in all; a sweep where no trial
completed exits 1. Needs the
``distributed`` extra (optuna, and ray for ``--workers`` above 1).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agents.cli import EXIT_INTERRUPTED, quiet_on_closed_stdout
from agents.sweep.space import SweepSpaceError, load_sweep_space

EXIT_USAGE = 2
EXIT_RUNTIME = 1


def build_parser() -> argparse.ArgumentParser:
    """The argument parser."""
    parser = argparse.ArgumentParser(
        prog="skyjo-sweep",
        description="Optuna search over TrainConfig fields; each trial is a training run.",
    )
    parser.add_argument("--space", required=True, help="sweep space YAML (configs/sweeps/)")
    parser.add_argument("--trials", type=int, required=True, help="trials to run")
    parser.add_argument("--workers", type=int, default=1,
                        help="trials at a time (above 1: on local Ray; default 1, in process)")
    parser.add_argument("--sweep-dir", help="output directory (default: sweeps/SPACE_NAME)")
    parser.add_argument("--seed", type=int, default=0,
                        help="sampler seed, and root of the trials' seeds (default 0)")
    parser.add_argument("--ray-address", help="run on this existing Ray cluster instead")
    parser.add_argument("--resume", action="store_true",
                        help="continue the stopped sweep in --sweep-dir (same --space and "
                        "--seed) until it holds --trials trials in all")
    return parser


@quiet_on_closed_stdout
def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        space = load_sweep_space(args.space)
    except SweepSpaceError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        from agents.sweep.runner import SweepError, format_summary, run_sweep
    except ImportError as error:  # the optional extra is missing
        print(f"error: skyjo-sweep needs optuna ({error}); install it with "
              "pip install -e \".[distributed]\"", file=sys.stderr)
        return EXIT_USAGE
    sweep_dir = Path(args.sweep_dir or Path("sweeps") / Path(args.space).stem)
    try:
        result = run_sweep(space, sweep_dir, args.trials, workers=args.workers, seed=args.seed,
                           ray_address=args.ray_address, resume=args.resume)
    except SweepError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except ImportError as error:  # ray missing, asked for by --workers
        print(f"error: --workers above 1 needs ray ({error}); install it with "
              "pip install -e \".[distributed]\"", file=sys.stderr)
        return EXIT_USAGE
    print(format_summary(result))
    print(f"summary: {sweep_dir / 'summary.json'}")
    if result.interrupted:
        return EXIT_INTERRUPTED
    return 0 if result.best is not None else EXIT_RUNTIME


if __name__ == "__main__":
    sys.exit(main())
