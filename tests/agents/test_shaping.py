"""What training adds to the env's reward: potential-based shaping (over real episodes its
terms telescope to ``-Phi(s0)``) and the win bonus (a multiple of the placement reward at
each normally finished game, nothing else)."""

from __future__ import annotations

import numpy as np
import pytest
from stable_baselines3.common.vec_env import VecEnvWrapper

from agents.training.config import TrainConfig, TrainConfigError
from agents.training.shaping import shaping_wrapper, win_bonus_wrapper
from agents.training.start import prepare_start
from agents.training.trainer import Trainer
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationLayout
from skyjo_env.rewards import grid_potential, placement_rewards
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


# ------------------------------------------------------------------ the win bonus


@pytest.mark.parametrize(
    ("totals", "expected"),
    [
        ([10, 5, 5, 20], [-0.5, 0.5, 0.5, -0.5]),  # two winners share +1, two losers -1
        ([1, 2, 3], [1.0, -0.5, -0.5]),
        ([7, 7], [0.0, 0.0]),  # everyone ties: no winner
        ([40, 12], [-1.0, 1.0]),
    ],
)
def test_placement_rewards__known_answers(totals, expected):
    assert placement_rewards(np.array(totals)) == pytest.approx(expected)


def test_placement_rewards__sum_to_zero_and_reward_exactly_the_lowest_totals():
    rng = np.random.default_rng(5)
    for _ in range(500):
        totals = rng.integers(-10, 60, size=rng.integers(2, 9))
        rewards = placement_rewards(totals)
        assert rewards.sum() == pytest.approx(0.0, abs=1e-12)
        lowest = totals == totals.min()
        if not lowest.all():
            assert (rewards[lowest] > 0).all() and (rewards[~lowest] < 0).all()


class _Constant:
    """A mutable weight, like the running stage's ``win_bonus``."""

    def __init__(self, value: float):
        self.value = value

    def __call__(self) -> float:
        return self.value


def _random_steps(env, seed: int):
    """Step ``env`` with uniformly random legal moves forever, yielding each step's
    ``(rewards float64 (N,), dones, infos)``."""
    rng = np.random.default_rng(seed)
    env.reset()
    while True:
        masks = env.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in masks])
        _, rewards, dones, infos = env.step(actions)
        yield rewards.astype(np.float64), dones, infos


def _placement(end: dict) -> float:
    """The learner's placement reward in a finished game's ``episode_end`` info."""
    return placement_rewards(np.array(end["total_scores"]))[end["learner_seat"]]


def test_win_bonus__adds_the_weighted_placement_at_each_finished_game_only():
    recorder = RewardRecorder(SkyjoVecEnv(num_envs=6, rules=RULES, seed=11))
    env = win_bonus_wrapper(recorder, _Constant(2.5))
    finished = won = 0
    for rewards, dones, infos in _random_steps(env, seed=1):
        added = rewards - recorder.last_rewards
        assert (added[~dones] == 0.0).all()
        for b in np.flatnonzero(dones):
            end = infos[b]["episode_end"]
            assert added[b] == pytest.approx(2.5 * _placement(end), abs=1e-5)
            assert (added[b] > 0) == end["won"]  # two seats: no shared win but a tie
            finished += 1
            won += end["won"]
        if finished >= 12:
            break
    assert 0 < won < finished  # both signs were checked


def test_win_bonus__reads_the_weight_at_every_step():
    weight = _Constant(0.0)
    recorder = RewardRecorder(SkyjoVecEnv(num_envs=4, rules=RULES, seed=2))
    env = win_bonus_wrapper(recorder, weight)
    seen = {0.0: 0, 1.5: 0}
    for rewards, dones, infos in _random_steps(env, seed=3):
        added = rewards - recorder.last_rewards
        for b in np.flatnonzero(dones):
            assert added[b] == pytest.approx(
                weight.value * _placement(infos[b]["episode_end"]), abs=1e-5)
            seen[weight.value] += 1
        if min(seen.values()) >= 2:
            break
        # the weight of the next step: the one that has finished fewer games so far
        weight.value = min(seen, key=seen.get)


def test_win_bonus_config__refused_with_expert_value_fit_and_out_of_bounds():
    with pytest.raises(TrainConfigError, match="'win_bonus'.*expert_value_fit"):
        TrainConfig(win_bonus=1.0, expert_value_fit=True)
    with pytest.raises(TrainConfigError, match="win_bonus"):
        TrainConfig(win_bonus=-0.5)
    with pytest.raises(TrainConfigError, match="win_bonus"):
        TrainConfig(win_bonus=11.0)
    staged = TrainConfig(stages=[{"name": "a", "total_timesteps": 10}, {"name": "b", "win_bonus": 2.0}])
    assert [stage.win_bonus for stage in staged.stage_configs()] == [0.0, 2.0]


def _round_margin(end: dict) -> float:
    """The env's round reward of the game's last round at the learner's seat."""
    scores = np.array(end["round_scores"], np.float64)
    seat = end["learner_seat"]
    others = (scores.sum() - scores[seat]) / (len(scores) - 1)
    return -(scores[seat] - others) / 100.0


@pytest.mark.parametrize("stage_bonus", [0.0, 2.0])
def test_trainer_env__adds_the_running_stages_win_bonus(tmp_path, stage_bonus):
    config = TrainConfig(
        n_envs=4, batch_size=256, shaping=0.0, progress=False, imitation_games=0,
        opponent_mix={"random": 1.0},
        stages=[{"name": "plain", "total_timesteps": 100},
                {"name": "bonus", "total_timesteps": 100, "win_bonus": 2.0}],
    )
    trainer = Trainer(prepare_start(config), tmp_path / "run")
    env = trainer.build_env()
    if stage_bonus:
        trainer._enter_stage(1, 0)
    assert trainer.config.win_bonus == stage_bonus
    finished = 0
    for rewards, dones, infos in _random_steps(env, seed=4):
        for b in np.flatnonzero(dones):
            end = infos[b]["episode_end"]
            assert rewards[b] == pytest.approx(
                _round_margin(end) + (1.0 + stage_bonus) * _placement(end), abs=1e-5)
            finished += 1
        if finished >= 4:
            break


def test_trainer_env__no_win_bonus_wrapper_without_a_bonus(tmp_path):
    config = TrainConfig(n_envs=2, batch_size=128, progress=False)
    trainer = Trainer(prepare_start(config), tmp_path / "run")
    env = trainer.build_env()
    while hasattr(env, "venv"):
        assert type(env).__name__ != "WinBonus"
        env = env.venv
