"""Trajectories depend only on the seeds: churning the global RNGs mid-episode changes nothing.

After RLCard's determinism test: every env view is played twice from the same seed, the
second time reseeding and drawing from Python's `random`, NumPy's global generator and
torch's between steps.
"""

from __future__ import annotations

import random

import numpy as np

from skyjo_env import SkyjoGymEnv, SkyjoVecEnv, env
from skyjo_env.protocol import sample_legal


def churn(step: int) -> None:
    """Reseed and draw from every global generator (different each call)."""
    import torch

    random.seed(step * 7 + 1)
    random.random()
    np.random.seed(step * 13 + 2)  # noqa: NPY002 - the point is to disturb the global state
    np.random.random(5)  # noqa: NPY002
    torch.manual_seed(step * 17 + 3)
    torch.rand(3)


def aec_trajectory(disturb: bool) -> list:
    game = env(num_players=3)
    game.reset(seed=123)
    rng = np.random.default_rng(0)
    out = []
    for count, agent in enumerate(game.agent_iter(3000)):
        if disturb and count % 17 == 0:
            churn(count)
        observation, reward, terminated, truncated, _ = game.last()
        out.append((agent, observation["observation"].tobytes(), reward))
        if terminated or truncated:
            game.step(None)
            continue
        game.step(int(sample_legal(observation["action_mask"][None] == 1, rng)[0]))
    return out


def gym_trajectory(disturb: bool) -> list:
    view = SkyjoGymEnv(num_players=3)
    observation, _ = view.reset(seed=123)
    rng = np.random.default_rng(0)
    out = [observation.tobytes()]
    for count in range(600):
        if disturb and count % 11 == 0:
            churn(count)
        observation, reward, terminated, truncated, _ = view.step(
            int(sample_legal(view.action_masks()[None], rng)[0])
        )
        out.append((observation.tobytes(), reward, terminated))
        if terminated or truncated:
            observation, _ = view.reset()
            out.append(observation.tobytes())
    return out


def vec_trajectory(disturb: bool) -> list:
    venv = SkyjoVecEnv(8, num_players=3, seed=123)
    out = [venv.reset().tobytes()]
    rng = np.random.default_rng(0)
    for count in range(300):
        if disturb and count % 7 == 0:
            churn(count)
        observations, rewards, dones, _ = venv.step(sample_legal(venv.action_masks(), rng))
        out.append((observations.tobytes(), rewards.tobytes(), dones.tobytes()))
    return out


def test_aec__trajectory_ignores_global_rngs():
    assert aec_trajectory(False) == aec_trajectory(True)


def test_single_agent__trajectory_ignores_global_rngs():
    assert gym_trajectory(False) == gym_trajectory(True)


def test_vec_env__trajectory_ignores_global_rngs():
    assert vec_trajectory(False) == vec_trajectory(True)
