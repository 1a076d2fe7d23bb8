"""Milliseconds per decision of the search agent (`agents.search.SearchAgent`).

Collects the decisions the seat to act faces in a few games played by ``ev`` (only those
the agent actually searches: two or more legal actions, past the initial reveals), then
times the agent on them two ways and prints medians over the repeats:

- one decision per ``act`` call (latency of a lone game, e.g. ``skyjo-play``);
- all of them in one ``act`` call (a tournament batch), reported per decision.

Wall clock on whatever cores are free: on a shared machine, run it when they are quiet.
For the one-core figure, pin it (``taskset -c 0``); a PPO base runs with one torch thread
unless ``--torch-threads`` says otherwise.

Usage::

    python benchmarks/search_agent.py [--spec search:ev [--spec OTHER ...]] [--decisions 40]
        [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from agents.registry import make_agent
from skyjo_env.core import SkyjoRules, legal_action_mask, new_batch, reset, step
from skyjo_env.core.actions import Phase
from skyjo_env.encoding import ObservationEncoder


def searched_decisions(rules: SkyjoRules, count: int, seed: int = 0):
    """``count`` observations and masks of decisions the search agent searches."""
    ev = make_agent("ev", rules, seed)
    encoder = ObservationEncoder(rules)
    state = new_batch(rules, 8)
    reset(state, np.random.default_rng(seed))
    kept_obs, kept_masks = [], []
    rng = np.random.default_rng(seed)
    while sum(len(o) for o in kept_obs) < count and not state.all_over:
        running = ~state.game_over
        masks = legal_action_mask(state)
        observations = encoder.encode(state, state.current_player)
        searched = running & (masks.sum(axis=1) > 1) & (state.phase != Phase.INITIAL_REVEAL)
        # a random subset, so that early and late decisions of a round both appear
        searched &= rng.random(state.batch_size) < 0.3
        kept_obs.append(observations[searched])
        kept_masks.append(masks[searched])
        actions = np.full(state.batch_size, -1, np.int64)
        actions[running] = ev.act(observations[running], masks[running])
        step(state, actions)
    return np.concatenate(kept_obs)[:count], np.concatenate(kept_masks)[:count]


def time_agent(agent, observations: np.ndarray, masks: np.ndarray) -> tuple[float, float]:
    """One repeat: ms/decision one decision per ``act`` call, then all in one call.

    Args:
        agent: the agent to time (already warmed up).
        observations: float32 ``(N, obs_dim)``; masks: bool ``(N, 27)``.
    """
    start = time.perf_counter()
    for i in range(len(observations)):
        agent.act(observations[i : i + 1], masks[i : i + 1])
    single = (time.perf_counter() - start) * 1000 / len(observations)
    start = time.perf_counter()
    agent.act(observations, masks)
    batched = (time.perf_counter() - start) * 1000 / len(observations)
    return single, batched


def main(argv: list[str] | None = None) -> None:
    """Time each agent and print the medians side by side, with ratios to the first."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", action="append",
                        help="agent spec to time (repeatable; default search:ev); the "
                        "ratios are to the first")
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--decisions", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="torch threads for a PPO base (1: the one-core figure)")
    args = parser.parse_args(argv)
    specs = args.spec or ["search:ev"]
    if any("ppo:" in spec for spec in specs):
        import torch

        torch.set_num_threads(args.torch_threads)
    rules = SkyjoRules(num_players=args.players)
    observations, masks = searched_decisions(rules, args.decisions)
    agents = [make_agent(spec, rules, 0) for spec in specs]
    for agent in agents:
        agent.act(observations[:2], masks[:2])  # compile / load caches
    times = {spec: ([], []) for spec in specs}
    for _ in range(args.repeats):  # interleaved, so a busy spell slows every agent alike
        for spec, agent in zip(specs, agents, strict=True):
            single, batched = time_agent(agent, observations, masks)
            times[spec][0].append(single)
            times[spec][1].append(batched)
    print(f"{args.players} players, {len(observations)} searched decisions, median of "
          f"{args.repeats}, ms/decision (ratio to the first)")
    width = max(len(spec) for spec in specs)
    print(f"{'agent':<{width}}  {'one per call':>20}  {'all in one call':>20}")
    base = [statistics.median(column) for column in times[specs[0]]]
    for spec in specs:
        medians = [statistics.median(column) for column in times[spec]]
        cells = [f"{m:8.1f} ({m / b:5.2f}x)" for m, b in zip(medians, base, strict=True)]
        print(f"{spec:<{width}}  {cells[0]:>20}  {cells[1]:>20}")

if __name__ == "__main__":
    main()
