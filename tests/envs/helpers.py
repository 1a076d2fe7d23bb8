"""Shared pieces of the env tests: deterministic policies and AEC-env drivers."""

from __future__ import annotations

import numpy as np

from skyjo_env.core import layout
from skyjo_env.core.actions import Phase
from skyjo_env.rewards import seat_rewards_into

_HOLDING_PHASES = (int(Phase.PLACE_DRAWN), int(Phase.PLACE_DISCARD))


def pick_from(observation: np.ndarray, mask: np.ndarray) -> int:
    """A deterministic legal action that depends on the observation (so that two views that
    hand different observations soon take different actions).

    It never takes the discard top: a pure function of the observation could otherwise
    loop forever (take, swap into a face-up slot, ...) until the turn cap.
    """
    return pick_by_key(observation_key(observation), mask)


def observation_key(observation: np.ndarray) -> int:
    """An integer that depends on every entry of ``observation`` (float32 (O,))."""
    return int(round(float(np.abs(observation.astype(np.float64)).sum()) * 1000))


def pick_by_key(key: int, mask: np.ndarray) -> int:
    """The ``key``-th (modulo) legal action of ``mask``, never taking the discard top (see
    `pick_from`)."""
    mask = np.asarray(mask).astype(bool)
    take_discard = (mask.size - 3) // 2 + 1
    if mask[take_discard - 1]:  # DRAW is legal: choose the source without the discard
        mask = mask.copy()
        mask[take_discard] = False
    legal = np.flatnonzero(mask)
    return int(legal[key % legal.size])


class PickAgent:
    """An `Agent` playing `pick_from` row by row; counts its decisions."""

    def __init__(self, name: str = "pick"):
        self.name = name
        self.decisions = 0

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """`pick_from` per row."""
        self.decisions += len(action_masks)
        return np.array(
            [pick_from(o, m) for o, m in zip(observations, action_masks, strict=True)], np.int64
        )


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


class WithoutActOnFeatures:
    """Offers shared features but cannot act from them."""

    name = "half"
    shared_features = RowKeys()

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        return np.argmax(action_masks, axis=1)


def _rewards_of(event: int, round_scores, totals, game_bonus: bool) -> np.ndarray:
    """Every seat's reward for one step, from the one reward definition (`skyjo_env.rewards`)."""
    players = len(round_scores)
    seat = np.zeros((1, players, layout.NUM_SEAT_FIELDS), np.int32)
    seat[0, :, layout.ROUND_SCORE] = round_scores
    seat[0, :, layout.TOTAL] = totals
    out = np.zeros(players)
    seat_rewards_into(event, seat, 0, game_bonus, out)
    return out


def expected_round_rewards(round_scores) -> np.ndarray:
    """The round reward of every seat for a round with these scores (float64 (P,))."""
    return _rewards_of(layout.EVENT_ROUND_ENDED, round_scores, np.zeros(len(round_scores)), False)


def expected_game_rewards(totals) -> np.ndarray:
    """The placement reward of every seat at a game end with these totals (float64 (P,))."""
    totals = np.asarray(totals)
    return (
        _rewards_of(
            layout.EVENT_ROUND_ENDED | layout.EVENT_GAME_ENDED, np.zeros(len(totals)), totals, True
        )
    )


def advance_to(game, learner: str) -> float:
    """Play `pick_from` for every other agent of a raw AEC env until ``learner`` is to act
    or the game is over; returns the learner's reward collected on the way."""
    collected = 0.0
    while game.agent_selection != learner and not (
        game.terminations[learner] or game.truncations[learner]
    ):
        agent = game.agent_selection
        observation = game.observe(agent)
        game.step(pick_from(observation["observation"], observation["action_mask"]))
        collected += game.rewards[learner]
    return collected


def round_scores(game) -> np.ndarray:
    """The last scored round's scores of a raw AEC env's game."""
    return game.batch.seat[0, :, layout.ROUND_SCORE].copy()


def unconserved_games(state) -> np.ndarray:
    """Games of a `BatchState` whose cards are not all accounted for: int64 (K,).

    Grids (slots not cleared) + draw pile + discard pile + held card must be the deck
    (RULES.md §6), as in tests/core/test_invariants.py.
    """
    batch = state.batch_size
    low = int(state.deck.min())
    bins = int(state.deck.max()) - low + 1
    expected = np.bincount(state.deck.astype(np.int64) - low, minlength=bins)
    positions = np.arange(state.deck.size)
    holding = np.isin(state.game[:, layout.PHASE], _HOLDING_PHASES)[:, None]
    parts = [
        (state.grid.reshape(batch, -1), state.slot_state.reshape(batch, -1) != layout.CLEARED),
        (state.draw_pile, positions < state.game[:, layout.DRAW_SIZE, None]),
        (state.discard_pile, positions < state.game[:, layout.DISCARD_SIZE, None]),
        (state.game[:, layout.HELD, None], holding),
    ]
    counts = np.zeros((batch, bins), np.int64)
    for cards, counted in parts:
        # entries that are not counted may hold anything: clip them into range
        index = np.clip(cards.astype(np.int64) - low, 0, bins - 1)
        rows = np.broadcast_to(np.arange(batch)[:, None], index.shape)
        np.add.at(counts, (rows[counted], index[counted]), 1)
    return np.flatnonzero((counts != expected).any(axis=1))


def state_copy(state) -> tuple[np.ndarray, ...]:
    """Copies of every array of a `BatchState` (compare with `assert_same_state`)."""
    return tuple(array.copy() for array in state.arrays)


def assert_same_state(state, copy: tuple[np.ndarray, ...]) -> None:
    """Every array of ``state`` is bitwise what `state_copy` saw."""
    for now, before in zip(state.arrays, copy, strict=True):
        np.testing.assert_array_equal(now, before)
