"""Potential-based shaping: over real episodes the shaping terms telescope to ``-Phi(s0)``."""

from __future__ import annotations

import numpy as np
import pytest
from stable_baselines3.common.vec_env import VecEnvWrapper

from agents.training.shaping import shaping_wrapper
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationLayout
from skyjo_env.rewards import grid_potential
from skyjo_env.vec_env import SkyjoVecEnv

RULES = SkyjoRules(target_score=30)  # short games, every rule of a full game


class RewardRecorder(VecEnvWrapper):
    """Keeps the env's own rewards of the last step (below the shaping)."""

    def reset(self):
        return self.venv.reset()

    def step_wait(self):
        observations, rewards, dones, infos = self.venv.step_wait()
        self.last_rewards = rewards.astype(np.float64)
        return observations, rewards, dones, infos

    def action_masks(self):
        return self.venv.action_masks()


def _episodes_of_shaping(gamma: float, episode: str, wanted: int = 6):
    """Play random legal moves until ``wanted`` episodes end; per finished episode return
    (Phi of its first observation, discounted sum of its shaping terms)."""
    layout = ObservationLayout(RULES)
    recorder = RewardRecorder(SkyjoVecEnv(num_envs=4, rules=RULES, episode=episode, seed=3))
    env = shaping_wrapper(recorder, layout, gamma, weight=1.0)
    rng = np.random.default_rng(0)
    observations = env.reset()
    start_potential = grid_potential(observations, layout)
    sums = np.zeros(env.num_envs)
    ages = np.zeros(env.num_envs, np.int64)
    finished = []
    while len(finished) < wanted:
        masks = env.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in masks])
        observations, rewards, dones, _ = env.step(actions)
        shaping = rewards.astype(np.float64) - recorder.last_rewards
        sums += gamma**ages * shaping
        ages += 1
        for b in np.flatnonzero(dones):
            finished.append((start_potential[b], sums[b], ages[b]))
            sums[b], ages[b] = 0.0, 0
            start_potential[b] = grid_potential(observations[b : b + 1], layout)[0]
    return finished


@pytest.mark.parametrize("episode", ["game", "round"])
def test_shaping__terms_telescope_to_minus_the_first_potential(episode):
    finished = _episodes_of_shaping(gamma=1.0, episode=episode)
    for potential, total, length in finished:
        assert length > 1
        assert potential < 0  # a grid of positive expected value: a real, non-trivial sum
        assert total == pytest.approx(-potential, abs=1e-4)


def test_shaping__discounted_terms_telescope_below_gamma_one():
    finished = _episodes_of_shaping(gamma=0.9, episode="round", wanted=4)
    for potential, total, _ in finished:
        assert total == pytest.approx(-potential, abs=1e-4)


def test_grid_potential__face_down_cards_count_at_the_deck_mean():
    layout = ObservationLayout(RULES)
    pieces = layout.describe()
    observation = np.zeros((1, layout.size), np.float32)
    observation[0, pieces["own_hidden"]] = 1.0
    deck_mean = float(RULES.deck_array().mean())
    expected = -(RULES.num_slots * deck_mean) / 100.0
    assert grid_potential(observation, layout)[0] == pytest.approx(expected)
