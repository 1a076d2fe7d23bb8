"""Tournament throughput: full 2-player games per second, greedy vs ev (or any two specs).

Plays ``--games`` full games (to the target score) through `agents.evaluation.tournament.play_tournament`
``--repeats`` times after a compile warm-up, and prints the median games per second, the
projected time of a 10,000-game evaluation and whether it meets the target of under 60 s.
Falls back to random vs random (and says so) when `agents.baselines.heuristics` is missing.

    python benchmarks/eval_throughput.py [--games 2000] [--repeats 3]
    python benchmarks/eval_throughput.py --agents ppo:models/ppo_2p.zip ev --target-seconds 120

With ``--agents``, the agents are built from their specs (`agents.registry.make_agent`) and
torch (if a ``ppo:`` agent loads it) runs on ``--torch-threads`` threads, as in
``evaluate.py``; the shipped 2-player network's target is 10,000 games in < 120 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np
from machine_load import load_average  # the module beside this script

from agents.evaluation.games import agent_seed, set_torch_threads
from agents.evaluation.tournament import play_tournament
from skyjo_env.core.rules import SkyjoRules

TARGET_GAMES = 10_000
TARGET_SECONDS = 60.0


def _agents(rules: SkyjoRules, seed: int):
    """``(agents, label, note)``: greedy vs ev, or random vs random without heuristics."""
    try:
        from agents.baselines.heuristics import EVAgent, GreedyAgent
    except ImportError as error:
        from skyjo_env.protocol import RandomAgent

        agents = [RandomAgent(agent_seed(seed, 0)), RandomAgent(agent_seed(seed, 1))]
        note = f"agents.baselines.heuristics unavailable ({error}); measured random vs random instead"
        return agents, "random vs random", note
    agents = [GreedyAgent(rules, seed=agent_seed(seed, 0)), EVAgent(rules, seed=agent_seed(seed, 1))]
    return agents, "greedy vs ev", None


def _agents_from_specs(specs: list[str], rules: SkyjoRules, seed: int, threads: int):
    """``(agents, label, None)`` built from agent specs, torch on ``threads`` threads."""
    from agents.registry import make_agent

    agents = [make_agent(spec, rules, agent_seed(seed, i)) for i, spec in enumerate(specs)]
    set_torch_threads(threads)
    return agents, " vs ".join(specs), None


def main(argv=None) -> int:
    """Run the benchmark and print its report; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=2000, help="games per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--agents", nargs=2, metavar="SPEC",
                        help="two agent specs (default: greedy ev)")
    parser.add_argument("--target-seconds", type=float, default=TARGET_SECONDS,
                        help=f"target for {TARGET_GAMES:,} games (default {TARGET_SECONDS:.0f})")
    parser.add_argument("--torch-threads", type=int, default=1)
    args = parser.parse_args(argv)

    rules = SkyjoRules(num_players=2)
    if args.agents:
        agents, label, note = _agents_from_specs(args.agents, rules, args.seed,
                                                 args.torch_threads)
    else:
        agents, label, note = _agents(rules, args.seed)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs")
    print(f"load before: {load_average()}")
    if note:
        print(f"NOTE: {note}")

    started = time.perf_counter()
    # one master seed per run, spawned from --seed: the warm-up, then one per repeat
    run_seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(args.seed).spawn(
        args.repeats + 1)]
    play_tournament(agents, rules, 20, run_seeds[0], progress=False)  # JIT warm-up
    print(f"warm-up (compile) {time.perf_counter() - started:.1f} s")

    play_rates, total_rates, rounds = [], [], []
    for repeat in range(args.repeats):
        started = time.perf_counter()
        result = play_tournament(agents, rules, args.games, run_seeds[repeat + 1], progress=False)
        wall = time.perf_counter() - started
        play_rates.append(result.games / result.elapsed_s)
        total_rates.append(result.games / wall)
        rounds.append(float(result.records.rounds.mean()))
        print(
            f"repeat {repeat + 1}: {result.games} games in {wall:.2f} s "
            f"(play {result.elapsed_s:.2f} s, stats+ratings {wall - result.elapsed_s:.2f} s) "
            f"-> {result.games / wall:.0f} games/s, {rounds[-1]:.2f} rounds/game"
        )

    play_rate = statistics.median(play_rates)
    total_rate = statistics.median(total_rates)
    projected = TARGET_GAMES / total_rate
    verdict = "MEETS" if projected < args.target_seconds else "MISSES"
    print(f"{label}, 2 players, official rules, {args.games} games x {args.repeats} repeats")
    print(f"median: {total_rate:.0f} games/s end to end ({play_rate:.0f} games/s playing only)")
    print(
        f"projected {TARGET_GAMES} games: {projected:.1f} s -> {verdict} the target of "
        f"< {args.target_seconds:.0f} s"
    )
    print(f"load after: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
