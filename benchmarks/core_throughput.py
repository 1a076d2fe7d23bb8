"""Decisions per second of the rules engine under uniformly random legal play.

Two paths, side by side, for 2, 4 and 8 players and batches of 1, 256 and 4096 games:

* ``python API``: the batched Python interface as an environment uses it, one decision
  per game per call: `legal_action_mask`, numpy sampling of a legal action, `step`, and
  `reset(which=...)` for the games that ended.
* ``compiled loop``: `kernels.random_legal_play`, the whole loop inside numba.

Usage::

    python benchmarks/core_throughput.py           # under a minute
    python benchmarks/core_throughput.py --quick   # a few seconds, one repeat
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from skyjo_env.core import kernels
from skyjo_env.core.engine import legal_action_mask, new_batch, reset, step
from skyjo_env.core.rules import SkyjoRules

PLAYERS = (2, 4, 8)
BATCHES = (1, 256, 4096)
TARGET_RATE = 1_000_000
TARGET_MIN_BATCH = 1024


def python_api_run(state, policy: np.random.Generator, steps: int) -> int:
    """``steps`` batched decisions through the Python API; returns decisions taken."""
    batch = state.batch_size
    mask = np.empty((batch, state.num_actions), np.bool_)
    events = np.empty(batch, np.int32)
    taken = 0
    for _ in range(steps):
        over = state.game_over
        if over.any():
            reset(state, policy, which=np.flatnonzero(over))
        legal_action_mask(state, out=mask)
        actions = np.argmax(policy.random(mask.shape) * mask, axis=1)
        step(state, actions, events)
        taken += batch
    return taken


def compiled_run(state, policy_streams: np.ndarray, steps: int) -> int:
    """``steps`` decisions per game inside `kernels.random_legal_play`."""
    events = np.zeros(state.batch_size, np.int32)
    return int(kernels.random_legal_play(*state.arrays, steps, policy_streams, events))


def measure(run, calls: int) -> float:
    """Decisions per second of one timed ``run(calls)``."""
    start = time.perf_counter()
    taken = run(calls)
    return taken / (time.perf_counter() - start)


def rate(run, seconds: float, repeats: int) -> float:
    """Median decisions per second, each repeat sized to last about ``seconds``."""
    probe = measure(run, 4)  # also warms caches
    per_call = max(probe, 1.0)
    rates = []
    for _ in range(repeats):
        # calls are decisions per game for both paths, so size them from the probe
        calls = max(4, int(per_call * seconds / run.batch))
        rates.append(measure(run, calls))
        per_call = rates[-1]
    return statistics.median(rates)


class Runner:
    """A started batch bound to one path; callable with a number of decisions per game."""

    def __init__(self, players: int, batch: int, compiled: bool, seed: int):
        self.batch = batch
        self.state = new_batch(SkyjoRules(num_players=players), batch)
        self.policy = np.random.default_rng(seed)
        reset(self.state, self.policy)
        self.compiled = compiled
        self.streams = self.policy.integers(0, 2**63, size=batch, dtype=np.uint64)

    def __call__(self, calls: int) -> int:
        if self.compiled:
            return compiled_run(self.state, self.streams, calls)
        return python_api_run(self.state, self.policy, calls)


def machine_line() -> str:
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    return f"machine: {os.cpu_count()} cpus ({usable} usable), load average {load}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs, one repeat")
    args = parser.parse_args(argv)
    seconds, repeats = (0.1, 1) if args.quick else (0.5, 5)

    print(machine_line())
    print(f"timing: median of {repeats} run(s) of about {seconds:g} s each, after warm-up")
    started = time.perf_counter()
    for players in PLAYERS:  # compile (or load the cache) before any timing
        Runner(players, 2, compiled=False, seed=0)(8)
        Runner(players, 2, compiled=True, seed=0)(8)

    print(f"{'players':>7} {'batch':>6} {'python API dec/s':>17} {'compiled loop dec/s':>20}")
    results = {}
    for players in PLAYERS:
        for batch in BATCHES:
            row = []
            for compiled in (False, True):
                runner = Runner(players, batch, compiled, seed=players * 10_000 + batch)
                row.append(rate(runner, seconds, repeats))
            results[players, batch] = row
            print(f"{players:>7} {batch:>6} {row[0]:>17,.0f} {row[1]:>20,.0f}", flush=True)

    big = [batch for batch in BATCHES if batch >= TARGET_MIN_BATCH]
    python_best = max(results[2, batch][0] for batch in big)
    compiled_best = max(results[2, batch][1] for batch in big)

    def verdict(value: float) -> str:
        return "meets" if value >= TARGET_RATE else "misses"

    print(
        f"target {TARGET_RATE:,} decisions/s at batch >= {TARGET_MIN_BATCH} (2 players): "
        f"python API {python_best:,.0f} ({verdict(python_best)}), "
        f"compiled loop {compiled_best:,.0f} ({verdict(compiled_best)}); "
        f"total time {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
