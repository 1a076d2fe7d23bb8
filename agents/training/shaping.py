"""Potential-based reward shaping for training.

With ``Phi`` = minus the expected value of the learner's own grid / 100 (face-down cards at
the deck mean: `skyjo_env.rewards.grid_potential`), each step earns
``gamma * Phi(next) - Phi(previous)`` on top of the env's reward (``Phi`` = 0 after the
episode's end). Summed over an episode this is a constant, so
it leaves the best policy unchanged (Ng et al., 1999) while crediting a good swap at once
instead of at the round end.
"""

from __future__ import annotations

import numpy as np

from skyjo_env.encoding import ObservationLayout
from skyjo_env.rewards import grid_potential


def shaping_wrapper(venv, layout: ObservationLayout, gamma: float, weight: float):
    """``venv`` (an SB3 VecEnv of the learner's observations) with the shaping reward added.

    Args:
        venv: The env to wrap; its masks pass through (``action_masks``).
        layout: The observation layout (`grid_potential` reads the own grid from it).
        gamma: The discount factor of the run (the shaping's ``gamma``).
        weight: The shaping weight (``TrainConfig.shaping``).

    Returns:
        A ``GridPotentialShaping`` VecEnvWrapper; its ``_potential`` (float64 (N,)) is part
        of a run's resume state.
    """
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class GridPotentialShaping(VecEnvWrapper):
        """Adds ``weight * (gamma * Phi(next) - Phi(previous))`` to each reward, with
        ``Phi`` = `grid_potential` and ``Phi`` = 0 once an episode has ended."""

        def __init__(self):
            super().__init__(venv)
            self._potential = np.zeros(venv.num_envs)

        def reset(self):
            observations = self.venv.reset()
            self._potential = grid_potential(observations, layout)
            return observations

        def step_wait(self):
            observations, rewards, dones, infos = self.venv.step_wait()
            following = grid_potential(observations, layout)
            after = np.where(dones, 0.0, following)
            rewards = rewards + weight * (gamma * after - self._potential)
            self._potential = following
            return observations, rewards.astype(np.float32), dones, infos

        def action_masks(self) -> np.ndarray:
            """The wrapped env's masks (bool (N, A)), for MaskablePPO."""
            return self.venv.action_masks()

    return GridPotentialShaping()
