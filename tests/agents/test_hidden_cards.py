"""The leak check of `hidden_cards` itself: it fails for an agent that peeks, and for twins
that differ where a seat can see or do not differ at all."""

from __future__ import annotations

import numpy as np
import pytest
from hidden_cards import (
    PeekingAgent,
    assert_decisions_ignore_hidden_cards,
    assert_only_hidden_cards_differ,
    redeal_hidden,
)

from agents.baselines.heuristics import EVAgent
from skyjo_env.core import SkyjoRules, legal_action_mask, new_batch, reset, step
from skyjo_env.core.layout import DRAW_SIZE, FACE_UP, HIDDEN
from skyjo_env.encoding import ObservationEncoder
from skyjo_env.protocol import sample_legal


def _mid_game(rules: SkyjoRules, games: int, steps: int, seed: int):
    """``games`` games after ``steps`` random decisions each."""
    state = new_batch(rules, games)
    reset(state, np.random.default_rng(seed))
    rng = np.random.default_rng(seed + 1)
    for _ in range(steps):
        step(state, sample_legal(legal_action_mask(state), rng))
    return state


def test_redeal_hidden__same_unseen_cards_in_another_order_in_every_game():
    state = _mid_game(SkyjoRules(num_players=3), games=12, steps=20, seed=1)
    twin = redeal_hidden(state, np.random.default_rng(2))
    for b in range(state.batch_size):
        hidden = state.slot_state[b] == HIDDEN
        size = state.game[b, DRAW_SIZE]
        before = np.concatenate([state.grid[b][hidden], state.draw_pile[b, :size]])
        after = np.concatenate([twin.grid[b][hidden], twin.draw_pile[b, :size]])
        np.testing.assert_array_equal(np.sort(after), np.sort(before))
        assert not np.array_equal(after, before)
    assert (twin.rng != state.rng).all()
    assert_only_hidden_cards_differ(state, twin, ObservationEncoder(state.rules))


def test_assert_only_hidden_cards_differ__fails_on_a_seen_change_or_no_change():
    state = _mid_game(SkyjoRules(), games=4, steps=20, seed=3)
    encoder = ObservationEncoder(state.rules)
    with pytest.raises(AssertionError, match="unseen cards are unchanged"):
        assert_only_hidden_cards_differ(state, state.copy(), encoder)
    twin = redeal_hidden(state, np.random.default_rng(4))
    b, seat, slot = np.argwhere(state.slot_state == FACE_UP)[0]
    twin.grid[b, seat, slot] = (twin.grid[b, seat, slot] + 1) % 13  # a face-up card
    with pytest.raises(AssertionError, match="seen grid slots"):
        assert_only_hidden_cards_differ(state, twin, encoder)


def test_assert_decisions_ignore_hidden_cards__fails_for_an_agent_that_peeks():
    rules = SkyjoRules()
    state = _mid_game(rules, games=16, steps=24, seed=5)
    twin = redeal_hidden(state, np.random.default_rng(6))
    encoder = ObservationEncoder(rules)
    honest = (EVAgent(rules), EVAgent(rules))
    assert assert_decisions_ignore_hidden_cards(honest, state, twin, encoder) == 16
    with pytest.raises(AssertionError, match="peek: decisions changed with the unseen cards"):
        assert_decisions_ignore_hidden_cards(
            (PeekingAgent(state), PeekingAgent(twin)), state, twin, encoder
        )
