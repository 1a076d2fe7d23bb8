"""Training opponents: for each game, draws from ``opponent_mix`` (``random``, ``greedy``,
``ev``, ``self``), one per opponent seat or one for the whole table (``opponent_draw``);
``self`` picks a uniformly random frozen snapshot of the learner for each seat (with no
snapshot yet, the heuristics).
"""

from __future__ import annotations

import copy

import numpy as np

from agents.ppo.policy import PPOAgent
from agents.registry import make_agent
from agents.training.config import OPPONENT_KINDS, TrainConfig
from agents.training.seeds import SEED_POOL_HEURISTICS, derived_seed
from skyjo_env.core.rules import SkyjoRules


class OpponentPool:
    """Per-game opponent draws from the configured mix of heuristics and snapshots."""

    def __init__(self, config: TrainConfig, rules: SkyjoRules):
        self.rules = rules
        self.set_mix(config)
        # greedy and ev are always built: "self" falls back on them before any snapshot
        self.heuristics = {
            kind: make_agent(kind, rules, seed=derived_seed(config.seed, SEED_POOL_HEURISTICS, i))
            for i, kind in enumerate(("random", "greedy", "ev"))
        }
        self.snapshots: list[PPOAgent] = []

    def set_mix(self, config: TrainConfig) -> None:
        """Draw from ``config``'s ``opponent_mix`` and keep its ``max_snapshots`` from now
        on (a new stage of a run; the oldest snapshots beyond the new bound are dropped)."""
        self.kinds = [k for k in OPPONENT_KINDS if config.opponent_mix.get(k, 0) > 0]
        weights = np.array([config.opponent_mix[k] for k in self.kinds], dtype=np.float64)
        self.weights = weights / weights.sum()
        self.draw_per_table = config.opponent_draw == "table"
        self.max_snapshots = config.max_snapshots
        if hasattr(self, "snapshots"):
            del self.snapshots[: -self.max_snapshots]

    def drop_snapshots(self) -> None:
        """Leave no snapshot in the pool (a stage with ``fresh_pool``): new games draw
        ``self`` seats from the heuristics until one is added; games under way keep the
        opponents they drew."""
        self.snapshots.clear()

    def add_snapshot(self, agent: PPOAgent) -> None:
        """Add a frozen learner copy, dropping the oldest beyond ``max_snapshots``."""
        self.snapshots.append(agent)
        del self.snapshots[: -self.max_snapshots]

    def _draw_kind(self, rng: np.random.Generator) -> str:
        return self.kinds[rng.choice(len(self.kinds), p=self.weights)]

    def _opponent(self, kind: str, rng: np.random.Generator):
        if kind == "self":
            if self.snapshots:
                return self.snapshots[rng.integers(len(self.snapshots))]
            kind = "ev" if "ev" in self.kinds else "greedy"
        return self.heuristics[kind]

    def __call__(self, rng: np.random.Generator) -> list:
        """Opponents for the ``P - 1`` seats after the learner in one new game: each seat
        draws its kind, or (``opponent_draw: table``) one kind is drawn for them all."""
        seats = range(self.rules.num_players - 1)
        if self.draw_per_table:
            kind = self._draw_kind(rng)
            return [self._opponent(kind, rng) for _ in seats]
        return [self._opponent(self._draw_kind(rng), rng) for _ in seats]


def frozen_copy(model, name: str) -> PPOAgent:
    """A `PPOAgent` on a deep copy of ``model``'s policy (in eval mode), named ``name``:
    training the model on does not change it.

    The policy's action distribution keeps the last distribution it built; right after a
    gradient step (a run's final evaluation follows its last update) that one holds
    logits inside a gradient graph, which torch refuses to deep-copy. It is a cache
    every forward pass rebuilds, so the copy is taken without it.
    """
    action_dist = model.policy.action_dist
    last = action_dist.__dict__.pop("distribution", None)
    try:
        policy = copy.deepcopy(model.policy)
    finally:
        if last is not None:
            action_dist.distribution = last
    snapshot = copy.copy(model)
    snapshot.policy = policy
    snapshot.policy.set_training_mode(False)
    return PPOAgent(snapshot, name=name)
