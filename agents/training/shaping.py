"""What training adds to the env's reward: potential-based shaping and a win bonus.

With ``Phi`` = minus the expected value of the learner's own grid / 100 (face-down cards at
the deck mean: `skyjo_env.rewards.grid_potential`), each step earns
``gamma * Phi(next) - Phi(previous)`` on top of the env's reward (``Phi`` = 0 after the
episode's end). Summed over an episode this is a constant, so
it leaves the best policy unchanged (Ng et al., 1999) while crediting a good swap at once
instead of at the round end.

The win bonus (`win_bonus_wrapper`, ``TrainConfig.win_bonus``) is not a shaping: it adds
a multiple of the game's placement reward at each game's end, so it changes what the
learner is trained to want (winning, weighed more against the round margins).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from skyjo_env.encoding import ObservationLayout
from skyjo_env.rewards import grid_potential, placement_rewards


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


def win_bonus_wrapper(venv, weight: Callable[[], float]):
    """``venv`` (an SB3 VecEnv of `skyjo_env.vec_env.SkyjoVecEnv`'s steps) with the win
    bonus added at each finished game.

    Args:
        venv: The env to wrap; its masks pass through (``action_masks``). A finished game
            reports ``info["episode_end"]`` (the learner's seat, every total, whether it
            was truncated or ended by an illegal action).
        weight: The running stage's ``win_bonus`` (read at every step, so a stage may
            change it).

    Returns:
        A ``WinBonus`` VecEnvWrapper adding ``weight() * placement_rewards(totals)[seat]``
        to the reward of every game that ended normally (a truncated game has no winner,
        as in the env's own reward). It keeps no state between steps.
    """
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class WinBonus(VecEnvWrapper):
        """Adds ``win_bonus`` times the learner's placement reward at each game's end."""

        def reset(self):
            return self.venv.reset()

        def step_wait(self):
            observations, rewards, dones, infos = self.venv.step_wait()
            bonus = weight()
            if bonus > 0:
                rewards = rewards + bonus * placement_of_finished(dones, infos)
            return observations, rewards.astype(np.float32), dones, infos

        def action_masks(self) -> np.ndarray:
            """The wrapped env's masks (bool (N, A)), for MaskablePPO."""
            return self.venv.action_masks()

    return WinBonus(venv)


def placement_of_finished(dones: np.ndarray, infos: list[dict]) -> np.ndarray:
    """The learner's game-end placement reward in every env whose game ended normally.

    Args:
        dones: bool (N,), which envs finished an episode this step.
        infos: The step's N info dicts; a finished one holds ``"episode_end"``.

    Returns:
        float64 (N,): `placement_rewards` of the finished game's totals at the learner's
        seat; 0 where no game ended, or it was truncated or ended by an illegal action.
    """
    placement = np.zeros(len(dones), np.float64)
    for env in np.flatnonzero(dones):
        end = infos[env].get("episode_end")
        if end is None or end["truncated"] or end["illegal"]:
            continue
        placement[env] = placement_rewards(np.asarray(end["total_scores"]))[end["learner_seat"]]
    return placement
