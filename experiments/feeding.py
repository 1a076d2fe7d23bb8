"""How often each agent's discards let the next seat clear a line.

A card swapped out of a grid or a drawn card thrown away lands on the discard pile, where
the next seat may take it; when that seat places it and a column (or row) clears, the
discard *fed* it the clear. Eliminations decide Skyjo games, so feeding them to the next
seat is costly. Prints, per agent, its discards, the clears they fed, and the clears it
made with taken discards, over seat-rotated full games (AEC env, one game at a time).

    python experiments/feeding.py --agents ppo:models/ppo_2p.zip ev --games 400 --seed 0
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import skyjo_env
from agents.registry import make_agent
from skyjo_env.core import layout
from skyjo_env.core.actions import ActionKind, decode_action
from skyjo_env.core.rules import load_rules


def play(specs: list[str], games: int, seed: int, rules_name: str) -> dict[str, np.ndarray]:
    """Counters per agent position, float64 (P,) each: ``discards``, ``fed`` (clears the
    next seat made with this agent's discard), ``takes``, ``take_clears`` (clears made
    with a taken discard), ``games``."""
    players = len(specs)
    rules = load_rules(rules_name).replace(num_players=players)
    agents = [make_agent(spec, rules, seed=seed + k) for k, spec in enumerate(specs)]
    counts = {name: np.zeros(players) for name in ("discards", "fed", "takes", "take_clears")}
    for game in range(games):
        env = skyjo_env.env(rules=rules)
        env.reset(seed=seed + game // players)  # each deal once per seat rotation
        engine = env.unwrapped
        rotation = game % players
        last_discarder = taker = None
        for name in env.agent_iter():
            observation, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            seat = int(name.rsplit("_", 1)[1])
            who = (seat - rotation) % players
            action = int(agents[who].act(observation["observation"][None],
                                         observation["action_mask"][None])[0])
            cleared_before = int(engine.batch.seat[0, seat, layout.LINES_ELIMINATED])
            env.step(action)
            kind, _ = decode_action(action, rules.num_slots)
            if kind == ActionKind.TAKE_DISCARD:
                counts["takes"][who] += 1
                taker = (who, last_discarder)
            elif kind in (ActionKind.PLACE, ActionKind.DISCARD_DRAWN):
                cleared = int(engine.batch.seat[0, seat, layout.LINES_ELIMINATED]) > cleared_before
                if kind == ActionKind.PLACE and taker is not None and taker[0] == who and cleared:
                    counts["take_clears"][who] += 1
                    if taker[1] is not None and taker[1] != who:
                        counts["fed"][taker[1]] += 1
                taker = None
                last_discarder = who
                counts["discards"][who] += 1
    counts["games"] = np.full(players, float(games))
    return counts


def main() -> None:
    """Parse arguments, play, print one line per agent."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="+", required=True, help="agent specs, one per seat")
    parser.add_argument("--games", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rules", default="official")
    args = parser.parse_args()
    started = time.perf_counter()
    counts = play(args.agents, args.games, args.seed, args.rules)
    print(f"{args.games} games, seed {args.seed}, {time.perf_counter() - started:.0f} s")
    for k, spec in enumerate(args.agents):
        discards, fed = counts["discards"][k], counts["fed"][k]
        print(f"{spec}: {fed / args.games:.2f} clears fed to the next seat per game "
              f"({fed / max(discards, 1):.2%} of {discards:.0f} discards); "
              f"{counts['take_clears'][k] / args.games:.2f} clears per game made with taken "
              f"discards ({counts['takes'][k]:.0f} takes)")


if __name__ == "__main__":
    main()
