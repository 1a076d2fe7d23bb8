"""Opponents sharing a features function (`skyjo_env.protocol.SharedFeatures`): the
training games compute it once per turn over all the sharing agents' rows and hand each
agent its own rows, which plays exactly the games each agent plays from its observations."""

from __future__ import annotations

import numpy as np
import pytest

from skyjo_env import SkyjoVecEnv
from skyjo_env.learner_games import OpponentError
from skyjo_env.protocol import sample_legal

from .helpers import PickAgent, observation_key, pick_by_key


class RowKeys:
    """Shared features: each observation row's `observation_key`, int64 (N,); records the
    row count of every call (``fail``: raise instead)."""

    def __init__(self, key: str = "row-keys", fail: bool = False):
        self.key = key
        self.fail = fail
        self.calls: list[int] = []

    def __call__(self, observations: np.ndarray) -> np.ndarray:
        if self.fail:
            raise RuntimeError("boom")
        self.calls.append(len(observations))
        return np.array([observation_key(row) for row in observations], np.int64)


class KeyedAgent:
    """Plays `pick_by_key` of its row's `observation_key` plus ``salt`` (so that agents
    differ): from the observations in `act`, from rows of ``shared_features`` in
    `act_on_features`. ``shared_features=None`` offers no sharing."""

    def __init__(self, name: str, salt: int, shared_features: RowKeys | None):
        self.name = name
        self.salt = salt
        self.shared_features = shared_features
        self.calls_on_features = 0
        self.rows_on_features = 0

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        keys = np.array([observation_key(row) for row in observations], np.int64)
        return self._picked(keys, action_masks)

    def act_on_features(self, features: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        self.calls_on_features += 1
        self.rows_on_features += len(features)
        return self._picked(features, action_masks)

    def _picked(self, keys: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        return np.array([pick_by_key(int(k) + self.salt, m) for k, m in zip(keys, action_masks,
                                                                            strict=True)], np.int64)


def played(opponents, steps: int = 80, seed: int = 5) -> list[np.ndarray]:
    """Observations, rewards and dones of ``steps`` random learner steps at 4 players."""
    venv = SkyjoVecEnv(12, num_players=4, opponents=opponents, seed=seed)
    trace = [venv.reset()]
    rng = np.random.default_rng(0)
    for _ in range(steps):
        observations, rewards, dones, _ = venv.step(sample_legal(venv.action_masks(), rng))
        trace += [observations, rewards, dones]
    return trace


def keyed_seats(features: RowKeys | None) -> list[KeyedAgent]:
    return [KeyedAgent(f"k{salt}", salt, features) for salt in range(3)]


def test_vec_env__opponents_sharing_features_play_the_games_they_play_alone():
    shared = RowKeys()
    seats = keyed_seats(shared)
    with_sharing = played(seats)
    without = played(keyed_seats(None))
    assert len(with_sharing) == len(without)
    for got, expected in zip(with_sharing, without, strict=True):
        np.testing.assert_array_equal(got, expected)
    # one call per turn for the rows of every sharing agent to act in it (two or three of
    # them), each row handed to exactly one agent
    agent_calls = sum(agent.calls_on_features for agent in seats)
    assert 2 * len(shared.calls) <= agent_calls <= 3 * len(shared.calls)
    assert sum(shared.calls) == sum(agent.rows_on_features for agent in seats)


def test_vec_env__a_per_game_chooser_mixing_sharing_and_plain_agents_plays_the_same_games():
    def chooser_over(features: RowKeys | None):
        pool = [*keyed_seats(features), PickAgent("plain")]
        return lambda rng: [pool[k] for k in rng.integers(len(pool), size=3)], pool

    choose, pool = chooser_over(RowKeys())
    choose_alone, _ = chooser_over(None)
    for got, expected in zip(played(choose), played(choose_alone), strict=True):
        np.testing.assert_array_equal(got, expected)
    assert sum(agent.rows_on_features for agent in pool[:3]) > 0


def test_vec_env__agents_whose_features_keys_differ_each_act_from_observations():
    seats = [KeyedAgent(f"k{salt}", salt, RowKeys(key=f"key{salt}")) for salt in range(3)]
    played(seats, steps=20)
    assert all(agent.calls_on_features == 0 for agent in seats)
    assert all(agent.shared_features.calls == [] for agent in seats)


def test_vec_env__failing_shared_features_are_named_then_steps_are_refused_until_reset():
    seats = keyed_seats(RowKeys(fail=True))
    venv = SkyjoVecEnv(6, num_players=4, opponents=seats, seed=0)
    with pytest.raises(OpponentError, match="the shared features of opponent agent 'k0' "
                                            "raised RuntimeError: boom"):
        venv.reset()  # the opponents seated before the learner play in it
    assert venv.games.failure is not None
    assert not venv.action_masks().any()
    seats[0].shared_features.fail = False
    venv.reset()
    assert venv.games.failure is None
    assert venv.action_masks().any()


class WithoutActOnFeatures:
    """Offers shared features but cannot act from them."""

    name = "half"
    shared_features = RowKeys()

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        return np.argmax(action_masks, axis=1)


def test_vec_env__an_agent_offering_shared_features_it_cannot_use_is_refused():
    with pytest.raises(ValueError, match="opponent agent 'half' offers shared_features but no "
                                         r"act_on_features\(features, action_masks\)"):
        SkyjoVecEnv(4, num_players=3, opponents=WithoutActOnFeatures(), seed=0)
    unhashable = RowKeys(key=["a", "list"])
    with pytest.raises(ValueError, match="opponent agent 'k0'.s shared_features needs a "
                                         "hashable key: TypeError: unhashable type: 'list'"):
        SkyjoVecEnv(4, num_players=3, opponents=KeyedAgent("k0", 0, unhashable), seed=0)


class ShortRows(RowKeys):
    """Shared features that drop the last row."""

    def __call__(self, observations: np.ndarray) -> np.ndarray:
        return super().__call__(observations)[:-1]


def test_vec_env__shared_features_with_too_few_rows_are_named():
    seats = keyed_seats(ShortRows())
    with pytest.raises(OpponentError, match=r"the shared features of opponent agent 'k0' raised "
                                            r"ValueError: (\d+) rows for (\d+) observations"):
        SkyjoVecEnv(6, num_players=4, opponents=seats, seed=0).reset()
