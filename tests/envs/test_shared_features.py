"""Opponents sharing a features function (`skyjo_env.protocol.SharedFeatures`): the
training games compute it once per turn over all the sharing agents' rows and hand each
agent its own rows, which plays exactly the games each agent plays from its observations.
Agents that also share an acting key (`skyjo_env.protocol.SharedActing`) choose for all
their rows in one call."""

from __future__ import annotations

import numpy as np
import pytest

from skyjo_env import SkyjoVecEnv
from skyjo_env.core.engine import IllegalActionError
from skyjo_env.learner_games import OpponentError
from skyjo_env.protocol import sample_legal

from .helpers import PickAgent, RowKeys, WithoutActOnFeatures, observation_key, pick_by_key


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


class KeyedActing:
    """Shared acting for `KeyedAgent`s: each row's `pick_by_key` of its features plus its
    agent's salt, for all the agents' rows in one call; records each call's agent count
    and rows (``fail``: raise; ``illegal_for``: the agent whose rows get an action id past
    the last one instead)."""

    def __init__(self, key: str = "keyed", fail: bool = False, illegal_for: str | None = None):
        self.key = key
        self.fail = fail
        self.illegal_for = illegal_for
        self.calls: list[tuple[int, int]] = []

    def act_together(self, agents, members, features, action_masks) -> np.ndarray:
        if self.fail:
            raise RuntimeError("boom")
        self.calls.append((len(agents), len(members)))
        salts = np.array([agents[m].salt for m in members], np.int64)
        chosen = np.array([pick_by_key(int(k) + int(s), m) for k, s, m in
                           zip(features, salts, action_masks, strict=True)], np.int64)
        for row, member in enumerate(members):
            if agents[member].name == self.illegal_for:
                chosen[row] = action_masks.shape[1]  # no such action
        return chosen


def acting_seats(features: RowKeys | None, acting: KeyedActing | None) -> list[KeyedAgent]:
    seats = keyed_seats(features)
    for agent in seats:
        agent.shared_acting = acting
    return seats


def test_vec_env__opponents_acting_together_play_the_games_they_play_alone():
    shared, acting = RowKeys(), KeyedActing()
    seats = acting_seats(shared, acting)
    together = played(seats)
    for got, expected in zip(together, played(keyed_seats(None)), strict=True):
        np.testing.assert_array_equal(got, expected)
    # every turn: one features call and one acting call for two or three agents' rows
    assert len(acting.calls) == len(shared.calls) > 0
    assert all(2 <= agents <= 3 for agents, _ in acting.calls)
    assert [rows for _, rows in acting.calls] == shared.calls
    assert all(agent.calls_on_features == 0 for agent in seats)


def test_vec_env__a_chooser_mixing_acting_sharing_and_plain_agents_plays_the_same_games():
    def chooser_over(features: RowKeys | None, acting: KeyedActing | None):
        pool = [*acting_seats(features, acting), *keyed_seats(features), PickAgent("plain")]
        for salt, agent in enumerate(pool[3:6]):
            agent.salt = salt + 3
        return lambda rng: [pool[k] for k in rng.integers(len(pool), size=3)], pool

    shared, acting = RowKeys(), KeyedActing()
    choose, pool = chooser_over(shared, acting)
    choose_alone, _ = chooser_over(None, None)
    for got, expected in zip(played(choose), played(choose_alone), strict=True):
        np.testing.assert_array_equal(got, expected)
    assert acting.calls  # the acting agents chose together
    assert sum(agent.rows_on_features for agent in pool[3:6]) > 0  # the others on features
    # each row of the shared features went to one call: together, or one agent's own
    on_features = sum(agent.rows_on_features for agent in pool[:6])
    assert sum(rows for _, rows in acting.calls) + on_features == sum(shared.calls)


def test_vec_env__agents_whose_acting_keys_differ_each_act_on_their_shared_features():
    shared = RowKeys()
    actings = [KeyedActing(key=f"acting{salt}") for salt in range(3)]
    seats = keyed_seats(shared)
    for agent, acting in zip(seats, actings, strict=True):
        agent.shared_acting = acting
    played(seats, steps=20)
    assert all(acting.calls == [] for acting in actings)
    assert sum(agent.rows_on_features for agent in seats) == sum(shared.calls) > 0


def test_vec_env__failing_acting_together_is_named_then_steps_are_refused_until_reset():
    acting = KeyedActing(fail=True)
    venv = SkyjoVecEnv(6, num_players=4, opponents=acting_seats(RowKeys(), acting), seed=0)
    with pytest.raises(OpponentError, match=r"opponent agents 'k0', 'k1'(, 'k2')? acting "
                                            r"together raised RuntimeError: boom"):
        venv.reset()
    assert venv.games.failure is not None
    acting.fail = False
    venv.reset()
    assert venv.games.failure is None


def test_vec_env__an_illegal_action_chosen_together_names_the_agent_of_its_row():
    acting = KeyedActing(illegal_for="k1")
    venv = SkyjoVecEnv(6, num_players=4, opponents=acting_seats(RowKeys(), acting), seed=0)
    with pytest.raises(IllegalActionError, match="opponent agent 'k1' played an illegal action"):
        venv.reset()
        for _ in range(5):
            venv.step(sample_legal(venv.action_masks(), np.random.default_rng(0)))


class NoActTogether:
    key = "no-act-together"


def test_vec_env__shared_acting_it_cannot_use_is_refused():
    seat = KeyedAgent("k0", 0, RowKeys())
    seat.shared_acting = NoActTogether()
    with pytest.raises(ValueError, match="opponent agent 'k0'.s shared_acting has no "
                                         r"act_together\(agents, members, features, "
                                         r"action_masks\)"):
        SkyjoVecEnv(4, num_players=3, opponents=seat, seed=0)
    seat.shared_acting = KeyedActing(key=["a", "list"])
    with pytest.raises(ValueError, match="opponent agent 'k0'.s shared_acting needs a "
                                         "hashable key: TypeError: unhashable type: 'list'"):
        SkyjoVecEnv(4, num_players=3, opponents=seat, seed=0)
