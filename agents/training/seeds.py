"""The seeds of a training run's parts (`derived_seed`): each part's seed is a child of
the master seed, so no two parts share a random stream (as ``seed + k`` sums can).
"""

from __future__ import annotations

import numpy as np

#: Spawn keys of `derived_seed`, one per part of a training run that takes a seed.
SEED_POOL_HEURISTICS = 0
SEED_IMITATION_TEACHER = 1
SEED_IMITATION_DATA = 2
SEED_IMITATION_SHUFFLE = 3
SEED_EVALUATION = 4
SEED_EXPERT_DATA = 5
SEED_EXPERT_TEACHER = 6
SEED_EXPERT_SHUFFLE = 7


def derived_seed(seed: int, *spawn_key: int) -> int:
    """An int seed for one part of a run: ``SeedSequence(seed, spawn_key=spawn_key)``'s
    first 32-bit word.

    Agents and the engine take int seeds, so the child sequence is reduced to one int; the
    spawn key (e.g. ``(SEED_EVALUATION,)``, or ``(SEED_POOL_HEURISTICS, i)``) keeps the
    parts apart.

    Returns:
        An int in ``0 .. 2**32 - 1``.
    """
    return int(np.random.SeedSequence(seed, spawn_key=spawn_key).generate_state(1)[0])
