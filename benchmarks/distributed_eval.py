"""Distributed tournament throughput: games per second with 1 vs 2 local Ray workers.

For each worker count, starts a local Ray with that many CPUs (the start-up time is
reported on its own), plays a warm-up tournament so every worker has imported the engine
and loaded its compiled kernels, then plays ``--games`` full games of ev vs greedy
``--repeats`` times through `agents.evaluation.distributed.evaluate_agents_distributed`
(ratings off) and prints the median games per second and the ratio to 1 worker. The
single-process tournament (no Ray) is measured the same way for reference.

    python benchmarks/distributed_eval.py [--games 4000] [--repeats 3] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np
from machine_load import load_average  # the module beside this script

from agents.evaluation.distributed import DEFAULT_CHUNK_DEALS, evaluate_agents_distributed
from agents.evaluation.tournament import evaluate_agents
from agents.parallel import ray_session
from skyjo_env.core.rules import SkyjoRules

SPECS = ["ev", "greedy"]


def _rate(play, games: int, seeds: list[int]) -> tuple[float, list[float]]:
    """Median games per second (wall time of each call) of ``play(games, seed)``."""
    rates = []
    for seed in seeds:
        started = time.perf_counter()
        play(games, seed)
        rates.append(games / (time.perf_counter() - started))
    return statistics.median(rates), rates


def main(argv=None) -> int:
    """Run the benchmark and print its report; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=4000, help="games per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--chunk-deals", type=int, default=DEFAULT_CHUNK_DEALS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    rules = SkyjoRules(num_players=2)
    seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(args.seed).spawn(
        args.repeats + 1)]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs")
    print(f"load before: {load_average()}")
    print(f"{' vs '.join(SPECS)}, 2 players, {args.games} games x {args.repeats} repeats, "
          f"chunks of {args.chunk_deals} deal groups")

    def in_process(games, seed):
        evaluate_agents(SPECS, rules, games, seed, progress=False, ratings=False)

    in_process(20, seeds[0])  # compile / cache warm-up
    base, rates = _rate(in_process, args.games, seeds[1:])
    print(f"in-process (no Ray): median {base:.0f} games/s  {[round(r) for r in rates]}")

    medians = {}
    for workers in args.workers:
        started = time.perf_counter()
        with ray_session(workers):
            startup = time.perf_counter() - started

            def sharded(games, seed, workers=workers):
                evaluate_agents_distributed(
                    SPECS, rules, games, seed, workers=workers, chunk_deals=args.chunk_deals,
                    progress=False, ratings=False,
                )  # fmt: skip

            started = time.perf_counter()
            # two small chunks per worker, so that every worker process warms up
            evaluate_agents_distributed(
                SPECS, rules, 2 * workers * 40, seeds[0], workers=workers, chunk_deals=20,
                progress=False, ratings=False,
            )  # fmt: skip
            warmup = time.perf_counter() - started
            medians[workers], rates = _rate(sharded, args.games, seeds[1:])
        print(
            f"{workers} worker(s): Ray start {startup:.1f} s, worker warm-up {warmup:.1f} s, "
            f"median {medians[workers]:.0f} games/s  {[round(r) for r in rates]}"
        )
    reference = medians.get(1)
    for workers, rate in medians.items():
        against_one = f"{rate / reference:.2f}x 1 worker, " if reference else ""
        print(f"{workers} worker(s): {against_one}{rate / base:.2f}x in-process")
    print(f"load after: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
