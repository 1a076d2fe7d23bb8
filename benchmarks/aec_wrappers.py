"""The AEC env in PettingZoo's plain wrappers vs `skyjo_env.env()`, side by side.

Plays random legal games through ``OrderEnforcingWrapper(AssertOutOfBoundsWrapper(raw))``
and through whatever `skyjo_env.env()` returns, alternating the two so that a busy shared
machine slows both alike, and prints medians (per wall and per CPU second) and their ratio.
This is the measurement behind the choice of wrappers in `skyjo_env.aec.env`.

Usage::

    python benchmarks/aec_wrappers.py [--seconds 1.0] [--repeats 5] [--players 2]
"""

from __future__ import annotations

import argparse
import statistics

from env_throughput import aec_rate  # the module beside this script
from pettingzoo.utils import wrappers

from skyjo_env import env, raw_env


def plain(players: int):
    """The raw env in PettingZoo's own wrappers, nothing else."""
    return wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(raw_env(num_players=players)))


def main(argv: list[str] | None = None) -> None:
    """Measure both, alternating, and print the medians and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one timed run")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each")
    parser.add_argument("--players", type=int, default=2)
    args = parser.parse_args(argv)
    aec_rate(env(), 0.05)  # compile / load the kernels first
    makers = {"plain PettingZoo wrappers": plain, "skyjo_env.env()": lambda p: env(num_players=p)}
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in makers}
    for _ in range(args.repeats):
        for name, make in makers.items():
            runs[name].append(aec_rate(make(args.players), args.seconds))
    medians = {
        name: (statistics.median(r[0] for r in rates), statistics.median(r[1] for r in rates))
        for name, rates in runs.items()
    }
    print(f"{args.players} players, median of {args.repeats} runs of {args.seconds:.1f} s, decisions/s")
    for name, (wall, cpu) in medians.items():
        print(f"{name:<28}{wall:>12,.0f} wall{cpu:>12,.0f} cpu")
    (plain_wall, plain_cpu), (ours_wall, ours_cpu) = medians.values()
    print(f"plain / env(): {plain_wall / ours_wall:.2f} wall, {plain_cpu / ours_cpu:.2f} cpu")


if __name__ == "__main__":
    main()
