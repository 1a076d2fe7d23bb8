"""Training games with PPO snapshot opponents: each snapshot on its own, features shared
per turn, and features shared with the snapshots acting together.

`skyjo_env.learner_games.LearnerGames` computes the features of the opponents whose
features extractors are the same function once per turn over all their rows
(`agents.ppo.inference.PolicyFeatures`); before, every snapshot computed its own rows'
features in its own call. At a large table most turns hand each of up to
``max_snapshots`` snapshots a handful of rows, so those calls were mostly torch's per-op
overhead. The greedy snapshots of one architecture then also choose in one call
(`agents.ppo.policy.StackedActing`: one batched matrix product per layer over their
stacked weights) instead of a forward pass each.

Side by side in one process, alternating so that a busy machine slows all alike:
`SkyjoVecEnv` games at ``--players`` (8 by default; 256 games, the trainer's ``n_envs``)
whose opponents come from the training `OpponentPool` with 8 snapshots (copies of the
shipped network for that table size with noise added, so that each has its own weights),
for two mixes of the recipes:

* ``finetune_hot``: ``greedy 0.1, ev 0.7, self 0.2``, one kind per table;
* ``self only``: every seat a snapshot (the most sharing there can be).

The learner's actions are uniformly random legal ones (their cost is the same in all), so
the figures are env steps/s of the games and their opponents only, the median of
``--repeats`` runs of ``--steps`` learner steps each. Sharing features plays the very same
games; acting together may differ where two legal logits lie within float32 rounding
(`agents.ppo.inference.StackedActors`): the table says whether each path's observations and
rewards were identical to those of the snapshots on their own.

    python benchmarks/opponent_features.py [--players 8] [--steps 200] [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import time

import numpy as np
import torch
from machine_load import load_average  # the module beside this script

from agents.ppo.policy import PPOAgent, load_ppo_agent
from agents.training.config import TrainConfig
from agents.training.pool import OpponentPool
from skyjo_env import SkyjoVecEnv
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.protocol import sample_legal

MIXES = {
    "finetune_hot": ({"greedy": 0.1, "ev": 0.7, "self": 0.2}, "table"),
    "self only": ({"self": 1.0}, "seat"),
}


def snapshots(base: PPOAgent, count: int) -> list[PPOAgent]:
    """``count`` agents on copies of ``base``'s policy, each with its own noise added."""
    agents = []
    for k in range(count):
        policy = copy.deepcopy(base.policy)
        generator = torch.Generator().manual_seed(k)
        with torch.no_grad():
            for parameter in policy.parameters():
                parameter.add_(0.02 * torch.randn(parameter.shape, generator=generator))
        agents.append(PPOAgent(policy, name=f"snapshot{k}"))
    return agents


def pool_for(mix: dict, draw: str, agents: list, rules: SkyjoRules) -> OpponentPool:
    """The trainer's opponent pool for ``mix`` / ``draw`` at ``rules``, holding ``agents``."""
    config = TrainConfig(num_players=rules.num_players, opponent_mix=mix, opponent_draw=draw,
                         max_snapshots=len(agents))
    pool = OpponentPool(config, rules)
    for agent in agents:
        pool.add_snapshot(agent)
    return pool


def paths_for(model: str, rules: SkyjoRules) -> dict[str, list[PPOAgent]]:
    """Three sets of 8 snapshots of ``model`` (the same weights in each): on their own,
    sharing features, sharing features and acting together."""
    alone, shared, together = (snapshots(load_ppo_agent(model, rules), 8) for _ in range(3))
    for agent in alone:
        agent.shared_features = None  # each computes its own rows' features
    for agent in shared:
        agent.shared_acting = None  # each acts from its rows of the shared features
    return {"on their own": alone, "shared features": shared, "acting together": together}


def play(pool: OpponentPool, rules: SkyjoRules, steps: int, seed: int) -> tuple[float, list]:
    """Steps/s of ``steps`` random learner steps in 256 games, and what they observed."""
    venv = SkyjoVecEnv(256, rules=rules, opponents=pool, seed=seed)
    venv.reset()
    rng = np.random.default_rng(seed)
    seen = []
    started = time.perf_counter()
    for _ in range(steps):
        observations, rewards, _, _ = venv.step(sample_legal(venv.action_masks(), rng))
        seen.append((observations[:4].copy(), rewards.copy()))
    return steps * venv.num_envs / (time.perf_counter() - started), seen


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=8, choices=range(2, 9),
                        help="table size (the shipped network models/ppo_<P>p.zip)")
    parser.add_argument("--steps", type=int, default=200, help="learner steps per run")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each path")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a few seconds: small numbers")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.repeats = 20, 1
    torch.set_num_threads(1)
    rules = SkyjoRules(num_players=args.players)
    model = f"models/ppo_{args.players}p.zip"
    print(f"{os.cpu_count()} logical CPUs, torch {torch.__version__} with "
          f"{torch.get_num_threads()} thread; load before: {load_average()}")
    paths = paths_for(model, rules)
    print(f"{args.players} players, 256 games, 8 snapshots of {model}; {args.steps} learner "
          f"steps per run, median of {args.repeats} runs (env steps/s; 'same': the same "
          f"games as on their own)")
    names = list(paths)
    print(f"  {'mix':<14}" + "".join(f"{name:>18}" for name in names)
          + f"{'shared / own':>14}{'together / own':>16}{'same':>14}")
    for mix_name, (mix, draw) in MIXES.items():
        rates: dict[str, list[float]] = {name: [] for name in paths}
        seen = {}
        for agents in paths.values():  # warm-up: numba caches, torch allocations
            play(pool_for(mix, draw, agents, rules), rules, 2, args.seed)
        for _ in range(args.repeats):
            for name, agents in paths.items():
                rate, seen[name] = play(pool_for(mix, draw, agents, rules), rules, args.steps,
                                        args.seed)
                rates[name].append(rate)
        own, shared, together = (statistics.median(rates[name]) for name in names)
        same = "/".join(str(all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
                                for a, b in zip(seen[names[0]], seen[name], strict=True)))
                        for name in names[1:])
        print(f"  {mix_name:<14}{own:>18,.0f}{shared:>18,.0f}{together:>18,.0f}"
              f"{shared / own:>13.2f}x{together / own:>15.2f}x{same:>14}")
    print(f"load after: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
