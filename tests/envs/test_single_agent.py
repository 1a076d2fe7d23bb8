"""The single-agent Gymnasium view: checkers, equivalence with the AEC env, opponents."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from skyjo_env import IllegalActionError, RandomAgent, SkyjoGymEnv, load_rules, raw_env
from skyjo_env.core import layout
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.protocol import sample_legal

from .helpers import PickAgent, advance_to, expected_round_rewards, pick_from, round_scores

CHECKER_CONFIGS = {
    "2p": {"num_players": 2},
    "4p_rounds": {"num_players": 4, "episode": "round"},
    "online": {"rules": load_rules("online", num_players=3)},
}


@pytest.mark.parametrize("name", sorted(CHECKER_CONFIGS))
def test_single_agent__gymnasium_and_sb3_checkers_pass(name):
    # the checkers step with unmasked random actions: penalize mode keeps them running
    kwargs = dict(CHECKER_CONFIGS[name], illegal_action="penalize")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gymnasium_check_env(SkyjoGymEnv(**kwargs), skip_render_check=True)
        sb3_check_env(SkyjoGymEnv(**kwargs))
    assert [str(w.message) for w in caught] == []


@pytest.mark.parametrize("episode", ["game", "round"])
def test_single_agent__plays_the_aec_env_game_for_its_seat(episode):
    rules = SkyjoRules(num_players=3, target_score=40)
    view = SkyjoGymEnv(rules, opponents=PickAgent(), episode=episode)
    reference = raw_env(rules, episode=episode)
    steps = 0
    for seed in range(4):
        observation, info = view.reset(seed=seed)
        reference.reset(seed=seed)
        learner = f"player_{info['learner_seat']}"
        assert advance_to(reference, learner) == 0.0
        while True:
            expected = reference.observe(learner)
            np.testing.assert_array_equal(observation, expected["observation"])
            np.testing.assert_array_equal(view.action_masks(), expected["action_mask"] == 1)
            action = pick_from(observation, view.action_masks())
            observation, reward, terminated, truncated, _ = view.step(action)
            reference.step(action)
            expected_reward = reference.rewards[learner] + advance_to(reference, learner)
            assert reward == pytest.approx(expected_reward, abs=1e-12)
            assert terminated == reference.terminations[learner]
            assert truncated == reference.truncations[learner]
            steps += 1
            if terminated or truncated:
                np.testing.assert_array_equal(
                    observation, reference.observe(learner)["observation"]
                )
                assert not view.action_masks().any()
                break
    assert steps > 40


def test_single_agent__round_episode_return_is_the_round_reward():
    view = SkyjoGymEnv(num_players=4, episode="round")
    rng = np.random.default_rng(0)
    for seed in range(3):
        _, info = view.reset(seed=seed)
        terminated, rewards = False, []
        while not terminated:
            action = sample_legal(view.action_masks()[None], rng)[0]
            _, reward, terminated, truncated, info = view.step(action)
            assert not truncated
            rewards.append(reward)
        assert all(r == 0 for r in rewards[:-1])
        scores = round_scores(view.games)
        assert info["round_scores"] == scores.tolist()
        assert rewards[-1] == pytest.approx(expected_round_rewards(scores)[info["learner_seat"]])
        assert "won" in info and len(info["total_scores"]) == 4


def test_single_agent__learner_seat_is_random_and_reproducible():
    def seats(seed):
        view = SkyjoGymEnv(num_players=3, episode="round")
        out = [view.reset(seed=seed)[1]["learner_seat"]]
        out += [view.reset()[1]["learner_seat"] for _ in range(30)]
        return out

    assert seats(3) == seats(3)
    assert set(seats(3)) == {0, 1, 2}
    assert seats(3) != seats(4)


def test_single_agent__each_opponent_plays_its_relative_seat():
    view = SkyjoGymEnv(num_players=3)
    played = {"next": set(), "after_next": set()}

    class SeatRecorder:
        def __init__(self, name):
            self.name = name
            self.inner = RandomAgent(0)

        def act(self, observations, action_masks):
            seat = int(view.games.batch.game[0, layout.CURRENT])
            played[self.name].add((seat - view.learner_seat) % 3)
            return self.inner.act(observations, action_masks)

    view.games.set_opponents([SeatRecorder("next"), SeatRecorder("after_next")])
    view._owns_opponent = False
    rng = np.random.default_rng(0)
    for seed in range(3):
        view.reset(seed=seed)
        for _ in range(60):
            if view.step(sample_legal(view.action_masks()[None], rng)[0])[2]:
                break
    assert played == {"next": {1}, "after_next": {2}}


def test_single_agent__illegal_action_raises_or_is_penalised():
    view = SkyjoGymEnv(num_players=2)
    observation, _ = view.reset(seed=1)
    illegal = int(np.flatnonzero(~view.action_masks())[0])
    with pytest.raises(IllegalActionError, match="illegal action"):
        view.step(illegal)
    np.testing.assert_array_equal(view._observation(), observation)  # nothing changed

    view = SkyjoGymEnv(num_players=2, illegal_action="penalize", illegal_penalty=-3.0)
    view.reset(seed=1)
    _, reward, terminated, truncated, info = view.step(illegal)
    assert (reward, terminated, truncated) == (-3.0, True, False)
    assert "won" not in info
    with pytest.raises(RuntimeError, match="reset"):
        view.step(0)


def test_single_agent__bad_opponents_are_rejected():
    with pytest.raises(ValueError, match="opponents must be an Agent"):
        SkyjoGymEnv(num_players=2, opponents=object())
    with pytest.raises(ValueError, match="Agent protocol"):
        SkyjoGymEnv(num_players=3, opponents=[RandomAgent(0), "random"])
    with pytest.raises(ValueError, match="opponent seats"):
        SkyjoGymEnv(num_players=4, opponents=[RandomAgent(0), RandomAgent(1)])


def test_single_agent__render_ansi_names_the_learner():
    view = SkyjoGymEnv(num_players=2, render_mode="ansi")
    view.reset(seed=0)
    text = view.render()
    assert "seat 0" in text and "seat 1" in text and "learner: seat" in text
