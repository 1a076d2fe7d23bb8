"""Decisions per second of random legal play through every env view, side by side.

Counts every decision (learner and opponents). Views: the wrapped PettingZoo AEC env
(`skyjo_env.env`), the raw AEC env, the single-agent Gymnasium env and the batched SB3
VecEnv (N = 64, 256), at 2 and 4 players, plus the bare engine kernel as the machine's
ceiling. Prints medians of a few timed repeats, the machine load, and ratios against the
targets (wrapped AEC >= 40,000/s at 2 players; VecEnv >= 500,000/s at N = 256).

Each rate is given per wall-clock second and per CPU second of this process: on a shared,
loaded machine the second is the steadier measure of the code itself.

Usage::

    python benchmarks/env_throughput.py [--seconds 1.0] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from skyjo_env import SkyjoGymEnv, SkyjoVecEnv, env, raw_env
from skyjo_env.core import SkyjoRules, kernels, new_batch, reset
from skyjo_env.protocol import RandomAgent, reads_observations, sample_legal

TARGET_WRAPPED_AEC = 40_000
TARGET_VEC_ENV = 500_000


class CountingAgent:
    """An `Agent` that counts the decisions it makes for another agent.

    ``reads_observations`` is the wrapped agent's unless given: True makes the env encode
    the opponents' observations even for a random agent, as it must for a policy.
    """

    def __init__(self, agent: RandomAgent, reads: bool | None = None):
        self.agent = agent
        self.name = agent.name
        self.decisions = 0
        self.reads_observations = reads_observations(agent) if reads is None else reads

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Delegate, counting rows."""
        self.decisions += action_masks.shape[0]
        return self.agent.act(observations, action_masks)


class UniformPicker:
    """Uniform legal choice from a 0/1 mask, from pre-drawn uniforms of one generator."""

    def __init__(self, seed: int):
        self.uniforms = np.random.default_rng(seed).random(1 << 16).tolist()
        self.i = 0

    def __call__(self, mask: np.ndarray) -> int:
        legal = mask.nonzero()[0]
        self.i = (self.i + 1) & 0xFFFF
        return int(legal[int(self.uniforms[self.i] * legal.size)])


class Clock:
    """Wall-clock and process CPU time since creation."""

    def __init__(self):
        self.wall = time.perf_counter()
        self.cpu = time.process_time()

    def elapsed(self) -> float:
        """Wall seconds so far."""
        return time.perf_counter() - self.wall

    def rates(self, decisions: int) -> tuple[float, float]:
        """``(decisions per wall second, decisions per CPU second)``."""
        wall = time.perf_counter() - self.wall
        cpu = max(time.process_time() - self.cpu, 1e-9)
        return decisions / wall, decisions / cpu


def aec_rate(game, seconds: float) -> tuple[float, float]:
    """Decisions/s (wall, CPU) of random legal play through an AEC env for ``seconds``."""
    pick = UniformPicker(0)
    decisions = 0
    game.reset(seed=0)
    clock = Clock()
    while clock.elapsed() < seconds:
        for _ in game.agent_iter():
            observation, _, terminated, truncated, _ = game.last()
            if terminated or truncated:
                action = None
            else:
                action = pick(observation["action_mask"])
                decisions += 1
            game.step(action)
        game.reset()
    return clock.rates(decisions)


def gym_rate(players: int, seconds: float) -> tuple[float, float]:
    """Decisions/s (wall, CPU; learner + opponents) through the single-agent env."""
    opponent = CountingAgent(RandomAgent(1))
    view = SkyjoGymEnv(num_players=players, opponents=opponent)
    pick = UniformPicker(0)
    view.reset(seed=0)
    learner = 0
    clock = Clock()
    while clock.elapsed() < seconds:
        _, _, terminated, truncated, _ = view.step(pick(view.action_masks()))
        learner += 1
        if terminated or truncated:
            view.reset()
    return clock.rates(learner + opponent.decisions)


def vec_rate(players: int, num_envs: int, seconds: float, encode_opponents: bool = False
             ) -> tuple[float, float]:
    """Decisions/s (wall, CPU; learner + opponents) through the batched VecEnv.

    The random opponents need no observations, so by default the env skips encoding them;
    ``encode_opponents`` measures the cost for opponents that read them (any policy).
    """
    opponent = CountingAgent(RandomAgent(1), reads=True if encode_opponents else None)
    venv = SkyjoVecEnv(num_envs, num_players=players, opponents=opponent, seed=0)
    rng = np.random.default_rng(0)
    venv.reset()
    for _ in range(5):  # warm up
        venv.step(sample_legal(venv.action_masks(), rng))
    opponent.decisions = 0
    learner = 0
    clock = Clock()
    while clock.elapsed() < seconds:
        venv.step(sample_legal(venv.action_masks(), rng))
        learner += num_envs
    return clock.rates(learner + opponent.decisions)


def engine_rate(players: int, num_games: int, seconds: float) -> tuple[float, float]:
    """Decisions/s of the engine's compiled random play (no env, no encoding): the ceiling."""
    state = new_batch(SkyjoRules(num_players=players), num_games)
    reset(state, list(range(num_games)))
    policy = np.arange(num_games, dtype=np.uint64) + np.uint64(12345)
    events = np.zeros(num_games, np.int32)
    taken = 0
    clock = Clock()
    while clock.elapsed() < seconds:
        taken += kernels.random_legal_play(*state.arrays, 64, policy, events)
    return clock.rates(taken)


def median_rates(measure, repeats: int) -> tuple[float, float, float]:
    """Medians (wall, CPU) and the best CPU rate over ``repeats`` calls of ``measure()``."""
    runs = [measure() for _ in range(repeats)]
    return (
        statistics.median(r[0] for r in runs),
        statistics.median(r[1] for r in runs),
        max(r[1] for r in runs),
    )


def main(argv: list[str] | None = None) -> None:
    """Run every measurement and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one timed run")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per measurement")
    args = parser.parse_args(argv)
    seconds, repeats = args.seconds, args.repeats

    # compile / load every kernel before timing
    aec_rate(env(), 0.05)
    gym_rate(2, 0.05)
    vec_rate(2, 8, 0.05)
    engine_rate(2, 8, 0.05)

    load_before = os.getloadavg()
    print(f"cpus: {os.cpu_count()}, load average (1/5/15 min) before: "
          f"{load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}")
    print(f"decisions/s (learner and opponents counted), median of {repeats} runs of "
          f"{seconds:.1f} s, per wall second and per CPU second of this process")
    header = "".join(f"{f'{p}p {kind}':>13}" for p in (2, 4) for kind in ("wall", "cpu"))
    print(f"{'view':<30}{header}")
    results: dict[str, dict[int, tuple[float, float, float]]] = {}
    rows = [
        ("AEC env, wrapped", lambda p: aec_rate(env(num_players=p), seconds)),
        ("AEC env, raw", lambda p: aec_rate(raw_env(num_players=p), seconds)),
        ("single-agent env", lambda p: gym_rate(p, seconds)),
        ("VecEnv N=64", lambda p: vec_rate(p, 64, seconds)),
        ("VecEnv N=256", lambda p: vec_rate(p, 256, seconds)),
        ("VecEnv N=256, opp. observe", lambda p: vec_rate(p, 256, seconds, True)),
        ("engine kernel N=256 (ceiling)", lambda p: engine_rate(p, 256, seconds)),
    ]
    for name, measure in rows:
        results[name] = {p: median_rates(lambda m=measure, p=p: m(p), repeats) for p in (2, 4)}
        cells = "".join(f"{rate:>13,.0f}" for p in (2, 4) for rate in results[name][p][:2])
        print(f"{name:<30}{cells}", flush=True)
    load_after = os.getloadavg()
    print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    for name, target in (("AEC env, wrapped", TARGET_WRAPPED_AEC), ("VecEnv N=256", TARGET_VEC_ENV)):
        wall, cpu, best = results[name][2]
        print(f"{name}, 2 players, vs the {target:,}/s target: median {wall:,.0f}/s wall = "
              f"{wall / target:.2f}x, {cpu:,.0f}/s CPU = {cpu / target:.2f}x; best run "
              f"{best:,.0f}/s CPU = {best / target:.2f}x")


if __name__ == "__main__":
    main()
