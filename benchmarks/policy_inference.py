"""PPO policy inference: SB3's distribution path vs `agents.ppo.inference.MaskedActor`.

Side by side in one process, alternating the two so that a busy shared machine slows both
alike, on real observations (EV playing itself):

* per call at a batch of 1 and per row at a batch of ``--batch`` (4096): the median of
  ``--repeats`` timed runs of `sb3_act` (the previous ``PPOAgent.act``: the grid features
  and the actor through ``policy.get_distribution``, sb3-contrib's ``MaskableCategorical``,
  then argmax) and of `PPOAgent.act` (now `MaskedActor`), and their ratio; the actions of
  both paths are compared on every observation timed;
* end to end: ``--games`` full games of the shipped 2-player network vs ``ev`` through
  `play_tournament` (as ``evaluate.py`` plays them), old path vs new, games/s and ratio,
  and whether both played the very same games.

The load average is printed before and after: on a shared 2-core machine the absolute
numbers move with it; the ratios much less.

    python benchmarks/policy_inference.py [--games 2000] [--repeats 5] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch
from machine_load import load_average  # the module beside this script

from agents.baselines.heuristics import EVAgent
from agents.evaluation.games import agent_seed
from agents.evaluation.tournament import play_tournament
from agents.ppo import PPOAgent, load_ppo_agent
from agents.training.imitation import collect_demonstrations
from skyjo_env.core.rules import SkyjoRules

MODEL = "models/ppo_2p.zip"


def sb3_act(agent: PPOAgent, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
    """The reference: ``PPOAgent.act`` as it was, through SB3's masked distribution.

    Args:
        agent: Supplies the policy, ``deterministic`` and the sampling generator.
        observations: float32 (N, O). action_masks: bool (N, A).

    Returns:
        int64 (N,).
    """
    obs = torch.as_tensor(np.asarray(observations, dtype=np.float32))
    masks = np.asarray(action_masks, dtype=bool)
    if obs.ndim == 1:
        obs, masks = obs[None], masks.reshape(1, -1)
    with torch.no_grad():
        distribution = agent.policy.get_distribution(obs, action_masks=masks)
        logits = distribution.distribution.logits
        if agent.deterministic:
            actions = logits.argmax(dim=1)
        else:
            actions = torch.multinomial(logits.softmax(dim=1), 1, generator=agent.generator)[:, 0]
    return actions.numpy().astype(np.int64)


class SB3PathAgent(PPOAgent):
    """A `PPOAgent` that acts through `sb3_act` (the old path), for the end-to-end run."""

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        return sb3_act(self, observations, action_masks)


def _seconds_per_call(act, observations, masks, batch: int, calls: int) -> float:
    """Seconds per call of ``act`` over ``calls`` consecutive ``batch``-row slices."""
    span = max(1, len(observations) - batch)
    starts = [(k * batch) % span for k in range(calls)]
    started = time.perf_counter()
    for start in starts:
        act(observations[start:start + batch], masks[start:start + batch])
    return (time.perf_counter() - started) / calls


def per_call(paths: dict, observations, masks, batch: int, calls: int, repeats: int) -> dict:
    """Median seconds per call of each path at ``batch`` rows, the paths alternating."""
    runs: dict[str, list[float]] = {name: [] for name in paths}
    for act in paths.values():
        act(observations[:batch], masks[:batch])  # warm-up
    for _ in range(repeats):
        for name, act in paths.items():
            runs[name].append(_seconds_per_call(act, observations, masks, batch, calls))
    return {name: statistics.median(times) for name, times in runs.items()}


def differing_actions(old, new, observations, masks, batch: int) -> int:
    """How many actions of the two paths differ over the data, in ``batch``-row calls."""
    differing = 0
    for start in range(0, len(observations), batch):
        rows = slice(start, start + batch)
        differing += int((old(observations[rows], masks[rows]) != new(observations[rows], masks[rows])).sum())
    return differing


def end_to_end(rules: SkyjoRules, games: int, seed: int, repeats: int) -> None:
    """Games/s of ``ppo`` vs ``ev`` with each path, alternating; checks the records agree."""
    kinds = {"SB3 distribution (old)": SB3PathAgent, "MaskedActor (new)": PPOAgent}
    base = load_ppo_agent(MODEL, rules, seed=agent_seed(seed, 0))
    rates: dict[str, list[float]] = {name: [] for name in kinds}
    totals = {}
    for _ in range(repeats):
        for name, kind in kinds.items():
            agents = [kind(base.policy, name="ppo"), EVAgent(rules, seed=agent_seed(seed, 1))]
            result = play_tournament(agents, rules, games, seed, progress=False, ratings=False)
            rates[name].append(result.games / result.elapsed_s)
            totals[name] = result.records.total
    for name, values in rates.items():
        print(f"  {name:<26}{statistics.median(values):>10,.0f} games/s (play only, median)")
    old, new = (statistics.median(v) for v in rates.values())
    same = np.array_equal(*totals.values())
    print(f"  new / old: {new / old:.2f}x; identical game records: {same}")
    print(f"  projected 10,000 games: {10_000 / old:.0f} s old, {10_000 / new:.0f} s new")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its report; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=2000, help="end-to-end games per run")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each path")
    parser.add_argument("--batch", type=int, default=4096, help="the large batch")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a few seconds: small numbers")
    args = parser.parse_args(argv)
    if args.quick:
        args.games, args.repeats = 200, 1
    rules = SkyjoRules(num_players=2)
    print(f"{os.cpu_count()} logical CPUs, torch {torch.__version__} with "
          f"{torch.get_num_threads()} threads; load before: {load_average()}")
    observations, masks, _ = collect_demonstrations(rules, [EVAgent(rules)], 60, args.seed)
    agent = load_ppo_agent(MODEL, rules)
    paths = {"SB3 distribution (old)": lambda o, m: sb3_act(agent, o, m), "MaskedActor (new)": agent.act}

    single_calls = 50 if args.quick else 300
    single = per_call(paths, observations, masks, 1, single_calls, args.repeats)
    large = per_call(paths, observations, masks, args.batch, 2 if args.quick else 5, args.repeats)
    print(f"{MODEL}, {len(observations):,} observations of ev self-play, "
          f"median of {args.repeats} runs")
    print(f"  {'path':<26}{'batch 1 (us/call)':>20}{f'batch {args.batch} (us/row)':>24}")
    for name in paths:
        print(f"  {name:<26}{single[name] * 1e6:>20.1f}{large[name] * 1e6 / args.batch:>24.2f}")
    old, new = paths
    print(f"  old / new: {single[old] / single[new]:.2f}x at batch 1, "
          f"{large[old] / large[new]:.2f}x at batch {args.batch}")
    for batch, rows in ((1, 2000), (args.batch, len(observations))):
        differing = differing_actions(*paths.values(), observations[:rows], masks[:rows], batch)
        print(f"  actions differing at batch {batch}: {differing} of {rows:,}")

    print(f"end to end: ppo ({MODEL}) vs ev, {args.games} games, median of {args.repeats} runs")
    end_to_end(rules, args.games, args.seed, args.repeats)
    print(f"load after: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
