"""How much noise ``search(luck=adjusted)`` takes out of the search's comparisons.

On the same decisions (positions of ``ev`` games, `search_agent.searched_decisions`), the
same search is run twice with the same seed, so on the same samples and random streams:
with raw rollout values and with their luck taken out (`agents.search.luck`). For every
tried action other than the base agent's own, it compares the standard error of the
paired advantage over the base's move (what ``confidence_z`` and the retest judge) and
prints, overall and per decision phase:

- the median ratio of the standard errors, adjusted / raw;
- the mean ratio of the variances (1 / that ratio = how many times the samples a raw
  search would need for the same precision);
- the mean absolute change of the actions' mean values (noise only: the luck is zero on
  average, so the adjustment moves no expected value).

Usage::

    python experiments/search_luck.py [--decisions 300] [--seed 11] \\
        [--spec "search(samples=64,confidence_z=2,verify_samples=0):ppo:models/ppo_2p.zip"]

``--spec`` is a search without a ``luck`` option; ``luck=adjusted`` is added to it.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _benchmarks import benchmark_module  # the module beside this script

from agents.registry import make_agent
from skyjo_env.core import SkyjoRules
from skyjo_env.core.actions import Phase
from skyjo_env.encoding import ObservationEncoder

searched_decisions = benchmark_module("search_agent").searched_decisions

DEFAULT_SPEC = ("search(samples=64,leaf=critic,depth=12,top_actions=4,confidence_z=0.5,"
                "verify_samples=128):ppo:models/ppo_2p.zip")


def with_luck(spec: str) -> str:
    """``spec`` with ``luck=adjusted`` added to its search options."""
    prefix, close, rest = spec.partition("):")
    if not close:
        raise SystemExit(f"--spec must be search(OPTIONS):BASE, got {spec!r}")
    return f"{prefix},luck=adjusted):{rest}"


def main(argv: list[str] | None = None) -> None:
    """Measure and print the standard-error ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", default=DEFAULT_SPEC)
    parser.add_argument("--decisions", type=int, default=300)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    rules = SkyjoRules()
    observations, masks = searched_decisions(rules, args.decisions, seed=args.seed)
    found = {}
    for label, spec in (("raw", args.spec), ("adjusted", with_luck(args.spec))):
        agent = make_agent(spec, rules, args.seed + 1)
        searched = agent.searchable_rows(observations, masks)
        started = time.perf_counter()
        found[label] = agent.action_values(observations[searched], masks[searched])
        print(f"{label}: {time.perf_counter() - started:.1f} s for {int(searched.sum())} "
              "decisions", flush=True)
    phases = ObservationEncoder(rules).decode(observations[searched])["phase"]
    raw, adjusted = found["raw"].errors, found["adjusted"].errors
    compared = np.isfinite(raw) & (raw > 0)  # tried, and not the base's own move
    ratio = adjusted[compared] / raw[compared]
    row_phase = np.broadcast_to(phases[:, None], raw.shape)[compared]
    print(f"{args.spec}, {compared.sum()} action comparisons; standard error adjusted / raw:")
    for name, chosen in [("all", np.ones(ratio.size, bool))] + [
        (Phase(p).name.lower(), row_phase == p) for p in np.unique(row_phase)
    ]:
        print(f"  {name:22s} {int(chosen.sum()):5d}  median {np.median(ratio[chosen]):.3f}"
              f"  variance ratio {np.mean(ratio[chosen] ** 2):.3f}")
    shift = np.nanmean(np.abs(found["raw"].means - found["adjusted"].means)) * 100
    print(f"mean |change of an action's mean value|: {shift:.2f} points of margin")


if __name__ == "__main__":
    main()
