"""Information-set samples per second (`skyjo_env.core.sample_information_set`).

Samples from one mid-round game (another seat has just drawn, so the held card is redealt
too) into a preallocated batch, for each batch size, and prints the median rate over the
repeats (wall clock: on a shared machine, run it when the cores are quiet).

Usage::

    python benchmarks/determinize_throughput.py [--sizes 256 4096] [--repeats 7] [--players 2]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from skyjo_env.core import SkyjoRules, kernels, layout, new_batch, reset, sample_information_set
from skyjo_env.core.actions import Phase


def source_game(players: int, seed: int = 0):
    """A batch and the index of a game where a seat holds a card it drew, a few turns in."""
    state = new_batch(SkyjoRules(num_players=players), 64)
    reset(state, seeds=np.random.default_rng(seed))
    policy = np.arange(64, dtype=np.uint64)
    events = np.zeros(64, np.int32)
    while True:
        kernels.random_legal_play(*state.arrays, 1, policy, events)
        wanted = (state.game[:, layout.PHASE] == int(Phase.PLACE_DRAWN)) & (
            state.game[:, layout.DISCARD_SIZE] > 8
        )
        if wanted.any():
            return state, int(np.flatnonzero(wanted)[0])


def rate(state, game: int, size: int, repeats: int) -> float:
    """Median samples per second over ``repeats`` timed calls of at least 0.2 s each."""
    observer = (int(state.game[game, layout.CURRENT]) + 1) % state.rules.num_players
    out = new_batch(state.rules, size)
    rng = np.random.default_rng(1)
    sample_information_set(state, game, observer, size, rng, out=out)  # compile / load
    rates = []
    for _ in range(repeats):
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < 0.2:
            sample_information_set(state, game, observer, size, rng, out=out)
            calls += 1
        rates.append(calls * size / (time.perf_counter() - start))
    return statistics.median(rates)


def main(argv: list[str] | None = None) -> None:
    """Measure each batch size and print its median rate."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 4096])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--players", type=int, default=2)
    args = parser.parse_args(argv)
    state, game = source_game(args.players)
    print(f"{args.players} players, median of {args.repeats} runs, samples/s (wall)")
    for size in args.sizes:
        print(f"B = {size:>6}{rate(state, game, size, args.repeats):>14,.0f}")


if __name__ == "__main__":
    main()
