"""Batched network calls of the search's rollouts (`agents.search.batching`): identical
rows computed once, big batches sliced, the same actions and values as one plain call."""

from __future__ import annotations

import numpy as np
import pytest
from test_search_lookahead import _searched

import agents.search.batching as batching
from agents.registry import make_agent
from agents.search.batching import (
    RolloutActor,
    call_plan,
    decides_rows_alone,
    distinct_rows,
    unique_row_inverse,
)
from skyjo_env.core import SkyjoRules
from skyjo_env.protocol import RandomAgent


class _RowSum:
    """A row-alone agent: the legal action nearest ``sum(observation) mod A``; records
    the row count of every call."""

    deterministic = True

    def __init__(self):
        self.calls: list[int] = []

    def act(self, observations, masks):
        self.calls.append(len(masks))
        wanted = np.floor(observations.sum(axis=1)).astype(np.int64) % masks.shape[1]
        distance = np.abs(np.arange(masks.shape[1]) - wanted[:, None])
        return np.where(masks, distance, 10**6).argmin(axis=1)


def _rows_with_repeats(rng, rows=200, distinct=30, size=7, actions=5):
    """``rows`` rows drawn from ``distinct`` different (observation, mask) pairs."""
    observations = rng.integers(0, 4, (distinct, size)).astype(np.float32)
    masks = rng.random((distinct, actions)) < 0.6
    masks[:, 0] = True
    pick = rng.integers(0, distinct, rows)
    return observations[pick], masks[pick]


def test_distinct_rows__each_row_points_to_the_first_row_with_its_bits():
    observations, masks = _rows_with_repeats(np.random.default_rng(0))
    rep = distinct_rows(observations, masks)
    both = np.concatenate([observations.view(np.uint32), masks], axis=1)
    for i in range(len(rep)):
        assert rep[i] == np.flatnonzero((both == both[i]).all(axis=1))[0]


def test_distinct_rows__same_observation_other_mask_or_zero_sign_stay_apart():
    observations = np.zeros((4, 3), np.float32)
    observations[3, 1] = -0.0  # equal to 0.0 as a number, not as bits
    masks = np.ones((4, 2), bool)
    masks[1, 1] = False
    np.testing.assert_array_equal(distinct_rows(observations, masks), [0, 1, 0, 3])


def test_distinct_rows__a_key_collision_costs_a_row_not_a_wrong_merge(monkeypatch):
    """Every row under one key: only the rows equal to the first are merged with it."""
    monkeypatch.setattr(batching, "_row_keys", lambda rows: np.zeros(len(rows), np.uint64))
    observations = np.array([[1.0], [2.0], [1.0], [2.0]], np.float32)
    np.testing.assert_array_equal(distinct_rows(observations, np.ones((4, 1), bool)),
                                  [0, 1, 0, 3])


def test_unique_row_inverse__equals_numpy_unique_over_rows():
    rng = np.random.default_rng(1)
    rows, _ = _rows_with_repeats(rng, rows=300, distinct=40)
    rows[::7, 2] = -0.0  # sorted with 0.0 by numpy
    rows[::11, 3] = 0.5
    expected = np.unique(rows, axis=0, return_inverse=True)[1].ravel()
    np.testing.assert_array_equal(unique_row_inverse(rows), expected)


def test_rollout_actor__a_row_alone_agent_gets_each_distinct_row_once_in_slices(
        monkeypatch):
    monkeypatch.setattr(batching, "NETWORK_ROWS", 8)
    monkeypatch.setattr(batching, "BLOCK", 4)
    observations, masks = _rows_with_repeats(np.random.default_rng(2), rows=202, distinct=30)
    agent = _RowSum()
    actions = RolloutActor(agent).act(observations, masks)
    np.testing.assert_array_equal(actions, _RowSum().act(observations, masks))
    distinct = len(np.unique(distinct_rows(observations[:200], masks[:200])))
    # the distinct rows of the whole blocks, padded to whole blocks, and the 2 last rows
    assert sum(agent.calls) == -(-distinct // 4) * 4 + 2
    assert max(agent.calls) <= 8 + 2


def test_call_plan__body_in_whole_blocks_and_the_tail_last(monkeypatch):
    monkeypatch.setattr(batching, "NETWORK_ROWS", 8)
    monkeypatch.setattr(batching, "BLOCK", 4)
    tail = np.array([100, 101, 102])
    plan = call_plan(np.arange(13), tail)
    assert [len(rows) for rows in plan] == [8, 11]  # 13 rows: 8 and 5 padded to 8
    np.testing.assert_array_equal(plan[1], [8, 9, 10, 11, 12, 8, 8, 8, 100, 101, 102])
    assert [list(rows) for rows in call_plan(np.arange(0), tail)] == [[100, 101, 102]]
    assert [len(rows) for rows in call_plan(np.arange(20), tail[:0])] == [8, 8, 4]


def test_rollout_actor__stops_merging_once_few_rows_repeat(monkeypatch):
    monkeypatch.setattr(batching, "BLOCK", 4)
    rng = np.random.default_rng(3)
    agent = _RowSum()
    actor = RolloutActor(agent)
    actor.act(*_rows_with_repeats(rng, rows=100, distinct=20))
    assert actor.merging  # 80% of the rows repeated others
    observations = np.arange(100, dtype=np.float32).reshape(50, 2)
    actor.act(observations, np.ones((50, 3), bool))
    assert not actor.merging and agent.calls[-1] == 50
    actor.act(np.zeros((50, 2), np.float32), np.ones((50, 3), bool))
    assert agent.calls[-1] == 50  # no longer merged


def test_rollout_actor__another_agent_gets_all_rows_in_one_call():
    """A random agent draws one number per row: merging or slicing would change them."""
    observations, masks = _rows_with_repeats(np.random.default_rng(4), rows=5000)
    actor = RolloutActor(RandomAgent(7))
    assert not decides_rows_alone(actor.agent) and not actor.merging
    np.testing.assert_array_equal(actor.act(observations, masks),
                                  RandomAgent(7).act(observations, masks))


@pytest.mark.parametrize("options", ["lookahead=two", "lookahead=one,luck=adjusted"])
def test_search__batched_network_calls_change_no_value(monkeypatch, options):
    """A network search with merged, sliced calls gives the same values, bit for bit, as
    with one plain call per step."""
    rules = SkyjoRules()
    observations, masks = _searched(rules, 2, 5, 3, rows=12)
    spec = f"search(samples=8,depth=6,verify_samples=16,{options}):ppo:models/ppo_2p.zip"
    monkeypatch.setattr(batching, "NETWORK_ROWS", 256)
    batched = make_agent(spec, rules, 3).act_with_values(observations, masks)
    monkeypatch.setattr(batching, "decides_rows_alone", lambda agent: False)
    plain = make_agent(spec, rules, 3).act_with_values(observations, masks)
    np.testing.assert_array_equal(batched[0], plain[0])
    for got, expected in zip(batched[1], plain[1], strict=True):
        np.testing.assert_array_equal(got, expected)
