"""Training opponents: for each game and each opponent seat, one draw from
``opponent_mix`` (``random``, ``greedy``, ``ev``, ``self``); ``self`` picks a uniformly
random frozen snapshot of the learner (with no snapshot yet, the heuristics).

Also the seeds of a training run's parts (`derived_seed`): each part's seed is a child of
the master seed, so no two parts share a random stream (as ``seed + k`` sums can).
"""

from __future__ import annotations

import copy

import numpy as np

from agents.ppo.config import OPPONENT_KINDS, TrainConfig
from agents.ppo.policy import PPOAgent
from agents.registry import make_agent
from skyjo_env.core.rules import (
    SkyjoRules,
)

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


class OpponentPool:
    """Per-game opponent draws from the configured mix of heuristics and snapshots."""

    def __init__(self, config: TrainConfig, rules: SkyjoRules):
        self.rules = rules
        self.kinds = [k for k in OPPONENT_KINDS if config.opponent_mix.get(k, 0) > 0]
        weights = np.array([config.opponent_mix[k] for k in self.kinds], dtype=np.float64)
        self.weights = weights / weights.sum()
        # greedy and ev are always built: "self" falls back on them before any snapshot
        self.heuristics = {
            kind: make_agent(kind, rules, seed=derived_seed(config.seed, SEED_POOL_HEURISTICS, i))
            for i, kind in enumerate(("random", "greedy", "ev"))
        }
        self.snapshots: list[PPOAgent] = []
        self.max_snapshots = config.max_snapshots

    def add_snapshot(self, agent: PPOAgent) -> None:
        """Add a frozen learner copy, dropping the oldest beyond ``max_snapshots``."""
        self.snapshots.append(agent)
        del self.snapshots[: -self.max_snapshots]

    def _draw(self, rng: np.random.Generator):
        kind = self.kinds[rng.choice(len(self.kinds), p=self.weights)]
        if kind == "self":
            if self.snapshots:
                return self.snapshots[rng.integers(len(self.snapshots))]
            kind = "ev" if "ev" in self.kinds else "greedy"
        return self.heuristics[kind]

    def __call__(self, rng: np.random.Generator) -> list:
        """Opponents for the ``P - 1`` seats after the learner in one new game."""
        return [self._draw(rng) for _ in range(self.rules.num_players - 1)]


def frozen_copy(model, name: str) -> PPOAgent:
    """A `PPOAgent` on a deep copy of ``model``'s policy (in eval mode), named ``name``:
    training the model on does not change it."""
    snapshot = copy.copy(model)
    snapshot.policy = copy.deepcopy(model.policy)
    snapshot.policy.set_training_mode(False)
    return PPOAgent(snapshot, name=name)
