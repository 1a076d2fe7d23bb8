"""The observation encoder: hidden information, layout and decoding.

States come from seeded random legal play over several rules configs; hand-set fields give
known-answer checks for `decode`.
"""

from __future__ import annotations

import numpy as np
import pytest

from skyjo_env.core import layout
from skyjo_env.core.actions import Phase
from skyjo_env.core.engine import (
    legal_action_mask,
    new_batch,
    reset,
    step,
    unseen_counts,
)
from skyjo_env.core.rules import SkyjoRules, load_rules
from skyjo_env.encoding import ObservationEncoder
from skyjo_env.protocol import sample_legal

CONFIGS = {
    "official_2p": SkyjoRules(),
    "official_3p": SkyjoRules(num_players=3),
    "official_5p": SkyjoRules(num_players=5),
    "online_4p": load_rules("online", num_players=4),
    "small_grid_8p": SkyjoRules(num_players=8, rows=2, cols=3, row_elimination=True),
}


def random_states(rules: SkyjoRules, games: int, steps: int, seed: int):
    """Yield a copy of a batch of ``games`` games after each of ``steps`` random steps."""
    state = new_batch(rules, games)
    rng = np.random.default_rng(seed)
    reset(state, rng)
    for _ in range(steps):
        mask = legal_action_mask(state)
        over = ~mask.any(axis=1)
        if over.any():
            reset(state, rng, which=np.flatnonzero(over))
            mask = legal_action_mask(state)
        step(state, sample_legal(mask, rng))
        yield state.copy()


def all_observations(encoder: ObservationEncoder, state) -> np.ndarray:
    """float32 (P, B, O): every game seen from every seat."""
    players = state.rules.num_players
    return np.stack([encoder.encode(state, seat) for seat in range(players)])


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_encoder__hidden_info_does_not_leak(name):
    rules = CONFIGS[name]
    encoder = ObservationEncoder(rules)
    rng = np.random.default_rng(7)
    checked = 0
    for state in random_states(rules, games=16, steps=150, seed=11):
        before = all_observations(encoder, state)
        shuffled = state.copy()
        for b in range(state.batch_size):
            # the draw pile, in another order
            size = shuffled.game[b, layout.DRAW_SIZE]
            shuffled.draw_pile[b, :size] = rng.permutation(shuffled.draw_pile[b, :size])
            # one opponent's face-down cards, in another order
            seat = rng.integers(rules.num_players)
            hidden = np.flatnonzero(shuffled.slot_state[b, seat] == layout.HIDDEN)
            shuffled.grid[b, seat, hidden] = rng.permutation(shuffled.grid[b, seat, hidden])
        np.testing.assert_array_equal(all_observations(encoder, shuffled), before)
        # every unseen card traded places with any other: draw pile and all face-down cards
        pooled = state.copy()
        for b in range(state.batch_size):
            size = pooled.game[b, layout.DRAW_SIZE]
            where = np.argwhere(pooled.slot_state[b] == layout.HIDDEN)
            values = np.concatenate(
                [pooled.draw_pile[b, :size], pooled.grid[b, where[:, 0], where[:, 1]]]
            )
            values = rng.permutation(values)
            pooled.draw_pile[b, :size] = values[:size]
            pooled.grid[b, where[:, 0], where[:, 1]] = values[size:]
        np.testing.assert_array_equal(all_observations(encoder, pooled), before)
        checked += state.batch_size
    assert checked >= 16 * 150


def test_encoder__public_changes_do_change_the_observation():
    # guards the leak test against a vacuous encoder
    rules = SkyjoRules(num_players=3)
    encoder = ObservationEncoder(rules)
    state = next(random_states(rules, games=1, steps=1, seed=3))
    before = all_observations(encoder, state)
    top = state.game[0, layout.DISCARD_SIZE] - 1
    state.discard_pile[0, top] = 12 if state.discard_pile[0, top] != 12 else -2
    after = all_observations(encoder, state)
    assert (after != before).any(axis=2).all()


@pytest.mark.parametrize("players", range(2, 13))
def test_encoder__describe_slices_cover_the_vector_exactly(players):
    rules = SkyjoRules(num_players=players, rows=2, cols=3)
    encoder = ObservationEncoder(rules)
    slices = encoder.describe()
    assert list(slices) == [name for name, _ in encoder.layout.pieces]
    covered = np.zeros(encoder.size, np.int64)
    position = 0
    for (name, size), piece in zip(encoder.layout.pieces, slices.values(), strict=True):
        assert piece.start == position, name
        assert piece.stop - piece.start == size, name
        assert piece.step is None
        covered[piece] += 1
        position = piece.stop
    assert position == encoder.size
    assert (covered == 1).all()


def make_known_state():
    """3 players, round 1 after the reveals, with hand-set public fields."""
    rules = SkyjoRules(num_players=3)
    state = new_batch(rules, 1)
    reset(state, [5])
    grid = np.arange(36, dtype=np.int16).reshape(3, 12) % 15 - 2  # values -2..12
    state.grid[0] = grid
    state.slot_state[0] = layout.HIDDEN
    state.slot_state[0, 0, [0, 1, 5]] = layout.FACE_UP  # seat 0: -2, -1, 3
    state.slot_state[0, 1, [2, 3]] = layout.FACE_UP  # seat 1: grid[1] = 10, 11, ... -> slots 2,3
    state.slot_state[0, 1, [4, 8]] = layout.CLEARED
    state.slot_state[0, 2, 11] = layout.FACE_UP
    state.game[0, layout.PHASE] = Phase.PLACE_DISCARD
    state.game[0, layout.CURRENT] = 1
    state.game[0, layout.HELD] = 9
    state.game[0, layout.FINISHER] = 2
    state.seat[0, :, layout.TOTAL] = [40, -3, 97]
    state.discard_pile[0, : state.game[0, layout.DISCARD_SIZE]] = 4
    return rules, state


def test_encoder__decode_round_trips_known_values():
    rules, state = make_known_state()
    encoder = ObservationEncoder(rules)
    observer = 2
    decoded = encoder.decode(encoder.encode(state, observer))
    grid, slots = state.grid[0], state.slot_state[0]
    order = [(observer + k) % 3 for k in range(3)]  # 2, 0, 1
    np.testing.assert_array_equal(
        decoded["own_values"][0], np.where(slots[2] == layout.FACE_UP, grid[2], 0)
    )
    np.testing.assert_array_equal(decoded["own_hidden"][0], slots[2] == layout.HIDDEN)
    np.testing.assert_array_equal(decoded["own_cleared"][0], slots[2] == layout.CLEARED)
    for j, seat in enumerate(order[1:]):
        np.testing.assert_array_equal(
            decoded["opponent_values"][0, j], np.where(slots[seat] == layout.FACE_UP, grid[seat], 0)
        )
        hidden, cleared = slots[seat] == layout.HIDDEN, slots[seat] == layout.CLEARED
        np.testing.assert_array_equal(decoded["opponent_hidden"][0, j], hidden)
        np.testing.assert_array_equal(decoded["opponent_cleared"][0, j], cleared)
    assert decoded["discard_top"][0] == 4
    # a card taken from the discard pile is public
    assert decoded["has_held_card"][0] and decoded["held_card"][0] == 9
    assert decoded["phase"][0] == Phase.PLACE_DISCARD
    assert decoded["current_seat"][0] == (1 - observer) % 3
    assert decoded["finisher"][0] == (2 - observer) % 3
    assert decoded["final_lap"][0]
    np.testing.assert_array_equal(decoded["unseen_counts"][0], unseen_counts(state, observer)[0])
    assert decoded["draw_pile_size"][0] == state.game[0, layout.DRAW_SIZE]
    assert decoded["discard_pile_size"][0] == state.game[0, layout.DISCARD_SIZE]
    visible = [int(np.where(slots[p] == layout.FACE_UP, grid[p], 0).sum()) for p in order]
    np.testing.assert_array_equal(decoded["visible_round_scores"][0], visible)
    np.testing.assert_array_equal(decoded["total_scores"][0], [97, 40, -3])


def test_encoder__drawn_card_is_known_only_to_its_holder():
    rules, state = make_known_state()
    state.game[0, layout.PHASE] = Phase.PLACE_DRAWN
    encoder = ObservationEncoder(rules)
    decoded = [encoder.decode(encoder.encode(state, seat)) for seat in range(3)]
    assert decoded[1]["has_held_card"][0] and decoded[1]["held_card"][0] == 9
    for seat in (0, 2):
        assert not decoded[seat]["has_held_card"][0] and decoded[seat]["held_card"][0] == 0


@pytest.mark.parametrize("players", [2, 4, 8])
def test_encoder__own_grid_first_and_opponents_in_relative_order(players):
    rules = SkyjoRules(num_players=players, rows=2, cols=3)
    encoder = ObservationEncoder(rules)
    for state in random_states(rules, games=4, steps=40, seed=players):
        for seat in range(players):
            decoded = encoder.decode(encoder.encode(state, seat))
            face_up = state.slot_state == layout.FACE_UP
            values = np.where(face_up, state.grid, 0)
            np.testing.assert_array_equal(decoded["own_values"], values[:, seat])
            hidden = state.slot_state[:, seat] == layout.HIDDEN
            np.testing.assert_array_equal(decoded["own_hidden"], hidden)
            for j in range(players - 1):
                other = (seat + 1 + j) % players
                np.testing.assert_array_equal(decoded["opponent_values"][:, j], values[:, other])
                np.testing.assert_array_equal(
                    decoded["opponent_hidden"][:, j], state.slot_state[:, other] == layout.HIDDEN
                )
            np.testing.assert_array_equal(
                decoded["current_seat"], (state.game[:, layout.CURRENT] - seat) % players
            )
