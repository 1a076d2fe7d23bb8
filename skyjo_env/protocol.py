"""The agent protocol: the small interface every policy offers to the environments.

An agent acts for many games at once from what its seats may know: the observation
vectors of `skyjo_env.encoding` and the legal-action masks. It owns its randomness, so
swapping an opponent never changes the cards dealt. The environments (single-agent view,
training VecEnv) drive opponents through this protocol; `agents/` builds the baselines and
the PPO adapter on it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Agent(Protocol):
    """A policy for one or more seats.

    Attributes:
        name: Short name used in reports.
    """

    name: str

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Choose one legal action per row.

        Args:
            observations: float32 (N, obs_size), each row one seat's observation.
            action_masks: bool (N, num_actions), True where legal; every row has one.

        Returns:
            int64 (N,) action ids, each legal in its row.
        """
        ...


def sample_legal(action_masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of ``action_masks`` (bool (N, A)) -> int64 (N,)."""
    noise = rng.random(action_masks.shape)
    noise[~action_masks] = -1.0
    return noise.argmax(axis=1).astype(np.int64)


class RandomAgent:
    """Uniform over the legal actions, from its own generator."""

    def __init__(self, seed: int | np.random.Generator | None = None, name: str = "random"):
        self.name = name
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Uniformly random legal actions (see `Agent.act`)."""
        return sample_legal(np.asarray(action_masks, dtype=bool), self.rng)
