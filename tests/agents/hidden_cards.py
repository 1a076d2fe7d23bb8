"""Shared by the leak tests: twin games that differ only in what the deciding seat cannot see.

A seat sees every face-up card, the discard pile, the card it holds, the scores and the
counters. It cannot see any face-down card (its own included), the order of the draw pile,
or the game's random stream (the order of later reshuffles). `redeal_hidden` builds the
twin of a state that differs in exactly those, in every running game;
`assert_only_hidden_cards_differ` checks that the twins differ there and nowhere else, and
that the deciding seat is shown the same observation and legal actions in both;
`assert_decisions_ignore_hidden_cards` then asks two agents built alike (same spec, same
seed, same calls so far), one per twin, to decide from what the harness gives an agent
in play, and requires equal decisions. An agent that reads the hidden cards by any other
channel (`PeekingAgent`) fails it: `tests/agents/test_hidden_cards.py` shows so.

Imported by basename (``from hidden_cards import ...``): ``tests/agents`` has no
``__init__.py`` because a package there would be named ``agents`` and shadow the project's.
"""

from __future__ import annotations

import numpy as np

from skyjo_env.core import layout, legal_action_mask
from skyjo_env.core.engine import BatchState
from skyjo_env.encoding import ObservationEncoder

#: The state arrays a seat sees in full (grid: only where a slot is not face down).
PUBLIC_ARRAYS = ("slot_state", "discard_pile", "game", "seat", "final_grid",
                 "final_slot_state")


def redeal_hidden(state: BatchState, rng: np.random.Generator, attempts: int = 50) -> BatchState:
    """A twin of ``state``: every running game's unseen cards dealt again.

    The face-down cards of every grid and the draw pile are shuffled together (the same
    cards, so the unseen counts stay true), until the new arrangement differs from the old
    one in value; each game's random stream is replaced too.

    Args:
        state: The batch (not changed).
        rng: Draws the new arrangements and streams.
        attempts: Shuffles tried per game before giving up.

    Returns:
        The twin (a copy).

    Raises:
        ValueError: A running game whose unseen cards cannot be rearranged (all equal).
    """
    twin = state.copy()
    for b in np.flatnonzero(~state.game_over):
        where = tuple(np.argwhere(state.slot_state[b] == layout.HIDDEN).T)  # (seats, slots)
        size = int(state.game[b, layout.DRAW_SIZE])
        cards = np.concatenate([state.grid[b][where], state.draw_pile[b, :size]])
        for _ in range(attempts):
            shuffled = rng.permutation(cards)
            if not np.array_equal(shuffled, cards):
                break
        else:
            raise ValueError(f"game {b}: its {cards.size} unseen cards cannot be rearranged")
        twin.grid[b][where] = shuffled[: where[0].size]
        twin.draw_pile[b, :size] = shuffled[where[0].size :]
    twin.rng[:] = rng.integers(0, 2**64, size=state.batch_size, dtype=np.uint64)
    return twin


def assert_only_hidden_cards_differ(
    state: BatchState, twin: BatchState, encoder: ObservationEncoder
) -> None:
    """Fail unless the twins differ in every running game's unseen cards and nowhere a seat
    sees, and the seat to act is shown the same observation and legal actions in both."""
    for name in PUBLIC_ARRAYS:
        np.testing.assert_array_equal(getattr(twin, name), getattr(state, name), err_msg=name)
    seen = state.slot_state != layout.HIDDEN
    np.testing.assert_array_equal(twin.grid[seen], state.grid[seen], err_msg="seen grid slots")
    running = ~state.game_over
    unseen_grid = ((twin.grid != state.grid) & ~seen).any(axis=(1, 2))
    draw_order = (twin.draw_pile != state.draw_pile).any(axis=1)
    assert (unseen_grid | draw_order)[running].all(), "some game's unseen cards are unchanged"
    np.testing.assert_array_equal(
        encoder.encode(twin, twin.current_player)[running],
        encoder.encode(state, state.current_player)[running],
        err_msg="the seat to act must be shown the same observation",
    )
    np.testing.assert_array_equal(legal_action_mask(twin), legal_action_mask(state))


def seat_decisions(agent, state: BatchState, encoder: ObservationEncoder) -> np.ndarray:
    """What ``agent`` chooses for the seat to act in each running game of ``state``, given
    what play gives it (`agents.evaluation.games.act_checked`): that seat's observations
    and legal masks. int64 (running games,)."""
    running = np.flatnonzero(~state.game_over)
    observations = encoder.encode(state, state.current_player)
    masks = legal_action_mask(state)
    return np.asarray(agent.act(observations[running], masks[running]), dtype=np.int64)


def assert_decisions_ignore_hidden_cards(
    agents: tuple, state: BatchState, twin: BatchState, encoder: ObservationEncoder
) -> int:
    """Fail unless ``agents[0]`` deciding in ``state`` and ``agents[1]`` (built alike)
    deciding in its twin (`redeal_hidden`) choose the same actions.

    Returns:
        The decisions compared.
    """
    assert_only_hidden_cards_differ(state, twin, encoder)
    here = seat_decisions(agents[0], state, encoder)
    there = seat_decisions(agents[1], twin, encoder)
    np.testing.assert_array_equal(
        there, here, err_msg=f"{agents[0].name}: decisions changed with the unseen cards"
    )
    return here.size


class PeekingAgent:
    """A cheat, to show the checks above can fail: it holds the table it plays at and
    picks the ``k``-th legal action, ``k`` from the face-down cards and the draw pile's top.

    Args:
        table: The `BatchState` it plays (rows of ``act`` are its running games, in order).
    """

    name = "peek"

    def __init__(self, table: BatchState):
        self.table = table

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """One legal action per row, chosen by the cards it should not see."""
        table = self.table
        running = np.flatnonzero(~table.game_over)
        face_down = np.where(table.slot_state == layout.HIDDEN, table.grid, 0)[running]
        weights = np.arange(1, face_down[0].size + 1).reshape(face_down[0].shape)
        top = table.draw_pile[running, table.game[running, layout.DRAW_SIZE] - 1]
        secret = (face_down * weights).sum(axis=(1, 2)) + top
        legal = [np.flatnonzero(mask) for mask in action_masks]
        return np.array([ids[k % ids.size] for ids, k in zip(legal, secret, strict=True)],
                        dtype=np.int64)
