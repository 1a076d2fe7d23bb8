"""How much a search setting's overrides of its PPO base are worth, without playing games.

Full-game evaluations of a search agent are slow (a 400-game run of ``search`` over
``ppo_2p`` takes many minutes) and still carry several points of noise.
This script measures the thing a search is for directly: on a fixed set of decisions
(positions of ``ev`` self-play, `benchmarks.search_agent.searched_decisions`), where the
search picks another action than its base agent, is that action better?

"Better" is judged by a reference estimate of the base policy's action value: the two
actions (the base's and the search's) are each played from the same ``--reference-samples``
sampled deals to the round's end by the base agent in every seat, and valued by the
training reward (`agents.search.values.CriticValue`: the round margin / 100 plus the
critic's value of the next round's start, or the placement bonus at a game's end). The
reference samples are drawn independently of the search's own samples, so a search
cannot score by fitting their noise. Choosing the action with the higher base-policy value
is a policy-improvement step, so a positive mean advantage predicts a stronger agent.

Printed per setting, in points of round margin (1 point = 0.01 reward):

- overrides: decisions where the search changed the base agent's action;
- advantage per override: mean reference value of the search's action minus the base's;
- gain per decision: the same summed over overrides / all decisions (what a game gains
  on average per searched decision), with its standard error over decisions (it includes
  the reference rollouts' own noise);
- from the second setting on, its gain per decision minus the first setting's, with the
  standard error of that paired difference: an override both settings make is valued
  once and counts the same for both, so only the overrides they disagree on add noise.

Usage::

    python benchmarks/search_strength.py --decisions 600 \\
        "search(samples=32,depth=12,confidence_z=1,top_actions=all,verify_samples=0)" \\
        "search(samples=32,depth=8,leaf=margin,confidence_z=2,top_actions=all,verify_samples=0)"

(each setting is a search spec prefix; ``:ppo:PATH`` is appended, so unnamed options keep
`agents.search.PPO_SEARCH`'s; put the reference setting first). The seconds printed are the search's own, not the reference rollouts'.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from search_agent import searched_decisions  # the module beside this script

from agents.registry import make_agent
from agents.search import state_from_observations
from skyjo_env.core import SkyjoRules

#: Rows per reference batch (each row rolls out 2 actions x reference samples).
_CHUNK = 16


def reference_advantages(
    reference, observations: np.ndarray, chosen: np.ndarray, base_actions: np.ndarray,
    samples: int,
) -> np.ndarray:
    """Reference value of ``chosen`` minus that of ``base_actions`` per row, in points.

    Args:
        reference: A `SearchAgent` whose rollouts run to the round's end with a
            `CriticValue` leaf (its ``_rollout_values`` is reused).
        observations: float32 (R, O) decisions.
        chosen, base_actions: int64 (R,), legal, different per row.
        samples: Sampled deals per row (the same for both actions).

    Returns:
        float64 (R,): mean paired advantage x 100.
    """
    rows = observations.shape[0]
    pair = np.zeros((rows, reference.rules.num_slots * 2 + 3), bool)
    pair[np.arange(rows), chosen] = True
    pair[np.arange(rows), base_actions] = True
    root = state_from_observations(reference.rules, observations)
    advantages = []
    for first in range(0, rows, _CHUNK):
        part = np.arange(first, min(rows, first + _CHUNK))
        values = reference._rollout_values(root, part, pair[part], samples)
        difference = values[np.arange(part.size), chosen[part]] - values[
            np.arange(part.size), base_actions[part]
        ]
        advantages.append(difference.mean(axis=1) * 100.0)
    return np.concatenate(advantages)


def main(argv: list[str] | None = None) -> None:
    """Measure each setting and print one line per setting."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("settings", nargs="+", help="search spec prefixes, e.g. 'search:'")
    parser.add_argument("--base", default="ppo:models/ppo_2p.zip")
    parser.add_argument("--decisions", type=int, default=600)
    parser.add_argument("--reference-samples", type=int, default=256)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--torch-threads", type=int, default=1)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.torch_threads)
    rules = SkyjoRules()
    observations, masks = searched_decisions(rules, args.decisions, seed=args.seed)
    base_actions = make_agent(args.base, rules, 0).act(observations, masks)
    reference = make_agent(f"search(samples=2,depth=100000,leaf=critic,confidence_z=2,"
                           f"top_actions=all,verify_samples=0):{args.base}", rules, args.seed + 1)
    print(f"base {args.base}, {len(observations)} decisions (seed {args.seed}), reference "
          f"{args.reference_samples} samples to the round's end; points of round margin")
    # (decision, action) -> reference advantage over the base action: settings that make
    # the same override share its value, so their difference is measured paired
    known: dict[tuple[int, int], float] = {}
    first_gains = None
    for setting in args.settings:
        spec = setting.rstrip(":") + ":" + args.base
        started = time.perf_counter()
        chosen = make_agent(spec, rules, 0).act(observations, masks)
        seconds = time.perf_counter() - started
        changed = np.flatnonzero(chosen != base_actions)
        if changed.size < 2:
            print(f"{setting}: {changed.size} overrides")
            continue
        new = np.array([i for i in changed if (i, chosen[i]) not in known], np.int64)
        if new.size:
            points = reference_advantages(reference, observations[new], chosen[new],
                                          base_actions[new], args.reference_samples)
            known.update({(i, chosen[i]): p for i, p in zip(new, points, strict=True)})
        gains = np.zeros(len(observations))  # per decision: 0 where the base move is kept
        gains[changed] = [known[(i, chosen[i])] for i in changed]
        points = gains[changed]
        gain_error = gains.std(ddof=1) / np.sqrt(gains.size)
        line = (f"{setting}: {changed.size} overrides of {len(observations)}; advantage per "
                f"override {points.mean():+.2f} (SE {points.std(ddof=1) / np.sqrt(points.size):.2f}); "
                f"gain per decision {gains.mean():+.3f} (SE {gain_error:.3f})")
        if first_gains is None:
            first_gains = gains
        else:
            difference = gains - first_gains
            line += (f"; vs the first setting {difference.mean():+.3f} "
                     f"(paired SE {difference.std(ddof=1) / np.sqrt(difference.size):.3f})")
        print(f"{line}; {seconds:.0f} s", flush=True)


if __name__ == "__main__":
    main()
