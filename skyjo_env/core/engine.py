"""Python interface of the rules engine: a batch of games as arrays, stepped by kernels.

A single game is a batch of one; every interface of skyjo-rl (PettingZoo env, Gymnasium
view, training VecEnv, tournaments) is a view over `BatchState` and the functions here.

Typical use::

    state = new_batch(SkyjoRules(), batch_size=256)
    reset(state, seeds=np.random.default_rng(0))
    while not state.all_over:
        mask = legal_action_mask(state)             # bool (B, A)
        events = step(state, some_actions(mask))    # int32 (B,) of EVENT_* bits
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skyjo_env.core import kernels, layout
from skyjo_env.core.actions import (
    NO_ACTION,
    ActionKind,
    Phase,
    decode_action,
    describe_action,
    num_actions,
)
from skyjo_env.core.jit import JIT_DISABLED, quiet_overflow
from skyjo_env.core.rules import (
    FINISHER_PENALTY_MODES,
    MAX_ROUNDS,
    MAX_TURNS_PER_ROUND,
    SkyjoRules,
)


class IllegalActionError(ValueError):
    """An action that the legal-action mask forbids; the message says which, where, why."""


def rules_params(rules: SkyjoRules) -> np.ndarray:
    """The rules as the kernels read them: int64 array of shape (NUM_PARAMS,)."""
    params = np.zeros(layout.NUM_PARAMS, dtype=np.int64)
    params[layout.P_PLAYERS] = rules.num_players
    params[layout.P_ROWS] = rules.rows
    params[layout.P_COLS] = rules.cols
    params[layout.P_SLOTS] = rules.num_slots
    params[layout.P_DECK_SIZE] = rules.deck_size
    params[layout.P_INITIAL_REVEALS] = rules.initial_reveals
    params[layout.P_REVEAL_RANDOM] = rules.initial_reveal_mode == "random"
    params[layout.P_NEXT_STARTER_PREVIOUS] = rules.next_round_starter == "previous_finisher"
    params[layout.P_COLUMN_ELIMINATION] = rules.column_elimination
    params[layout.P_ROW_ELIMINATION] = rules.row_elimination
    params[layout.P_RESHUFFLE_ALL] = rules.empty_draw_pile == "reshuffle_all"
    params[layout.P_FINAL_REVEAL_ELIMINATION] = rules.final_reveal_elimination
    params[layout.P_PENALTY_MODE] = FINISHER_PENALTY_MODES.index(rules.finisher_penalty_mode)
    params[layout.P_MULTIPLIER] = rules.finisher_multiplier
    params[layout.P_FLAT] = rules.finisher_flat_penalty
    params[layout.P_CONDITION_LT] = rules.finisher_penalty_condition == "other_lt"
    params[layout.P_ONLY_IF_POSITIVE] = rules.finisher_penalty_only_if_positive
    params[layout.P_TARGET] = rules.target_score
    # None still means the hard caps: no rules can make a game or a round endless
    params[layout.P_MAX_ROUNDS] = rules.max_rounds or MAX_ROUNDS
    params[layout.P_MAX_TURNS] = rules.max_turns_per_round or MAX_TURNS_PER_ROUND
    return params


@dataclass
class BatchState:
    """Struct-of-arrays state of ``B`` games under one rules config.

    Attributes:
        rules: The rules every game in the batch follows.
        params: int64 (NUM_PARAMS,), the rules as the kernels read them.
        deck: int16 (D,), the deck in increasing value order.
        grid: int16 (B, P, S), card values by slot (meaningless where cleared).
        slot_state: int8 (B, P, S), HIDDEN / FACE_UP / CLEARED.
        draw_pile: int16 (B, D), first ``draw_size`` entries, top last.
        discard_pile: int16 (B, D), first ``discard_size`` entries, top last.
        game: int32 (B, NUM_GAME_FIELDS), per-game scalars (see `layout`).
        seat: int32 (B, P, NUM_SEAT_FIELDS), per-seat scores and counters.
        rng: uint64 (B,), each game's own random stream.
        final_grid: int16 (B, P, S), grids at the end of the last scored round.
        final_slot_state: int8 (B, P, S), their slot states.
    """

    rules: SkyjoRules
    params: np.ndarray
    deck: np.ndarray
    grid: np.ndarray
    slot_state: np.ndarray
    draw_pile: np.ndarray
    discard_pile: np.ndarray
    game: np.ndarray
    seat: np.ndarray
    rng: np.ndarray
    final_grid: np.ndarray
    final_slot_state: np.ndarray

    def __post_init__(self) -> None:
        # built once: the hot paths pass these to every kernel call
        self._arrays = (
            self.grid,
            self.slot_state,
            self.draw_pile,
            self.discard_pile,
            self.game,
            self.seat,
            self.rng,
            self.final_grid,
            self.final_slot_state,
            self.params,
            self.deck,
        )

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """The arrays in kernel argument order (state, then params and deck)."""
        return self._arrays

    @property
    def batch_size(self) -> int:
        """Number of games ``B``."""
        return self.game.shape[0]

    @property
    def num_actions(self) -> int:
        """Size of the action space, ``2S + 3``."""
        return num_actions(self.rules.num_slots)

    @property
    def phase(self) -> np.ndarray:
        """int32 (B,) `Phase` of each game (a view)."""
        return self.game[:, layout.PHASE]

    @property
    def current_player(self) -> np.ndarray:
        """int32 (B,) seat to act in each game (a view)."""
        return self.game[:, layout.CURRENT]

    @property
    def held_card(self) -> np.ndarray:
        """int32 (B,) held card value; meaningful only in the two PLACE phases."""
        return self.game[:, layout.HELD]

    @property
    def finisher(self) -> np.ndarray:
        """int32 (B,) seat that ended the current round, -1 while none."""
        return self.game[:, layout.FINISHER]

    @property
    def total_scores(self) -> np.ndarray:
        """int32 (B, P) total score of each seat (a view)."""
        return self.seat[:, :, layout.TOTAL]

    @property
    def rounds_played(self) -> np.ndarray:
        """int32 (B,) number of completed rounds."""
        return self.game[:, layout.ROUND]

    @property
    def game_over(self) -> np.ndarray:
        """bool (B,) which games have ended (normally or truncated)."""
        return self.game[:, layout.PHASE] == Phase.GAME_OVER

    @property
    def truncated(self) -> np.ndarray:
        """bool (B,) which games ended by the turn cap rather than by the score."""
        return self.game[:, layout.TRUNCATED] != 0

    @property
    def all_over(self) -> bool:
        """True when every game in the batch has ended."""
        return bool(self.game_over.all())

    def draw_pile_of(self, b: int) -> np.ndarray:
        """Game ``b``'s draw pile, bottom to top (int16 view)."""
        return self.draw_pile[b, : self.game[b, layout.DRAW_SIZE]]

    def discard_pile_of(self, b: int) -> np.ndarray:
        """Game ``b``'s discard pile, bottom to top (int16 view)."""
        return self.discard_pile[b, : self.game[b, layout.DISCARD_SIZE]]

    def copy(self) -> BatchState:
        """A deep copy (the rules are shared: they are immutable)."""
        return BatchState(
            self.rules,
            self.params,
            self.deck,
            *(array.copy() for array in self.arrays[:9]),
        )


def new_batch(rules: SkyjoRules, batch_size: int) -> BatchState:
    """Allocate ``batch_size`` games, all in phase GAME_OVER until `reset` starts them."""
    if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    players, slots, deck_size = rules.num_players, rules.num_slots, rules.deck_size
    game = np.zeros((batch_size, layout.NUM_GAME_FIELDS), np.int32)
    game[:, layout.PHASE] = Phase.GAME_OVER
    return BatchState(
        rules=rules,
        params=rules_params(rules),
        deck=rules.deck_array(),
        grid=np.zeros((batch_size, players, slots), np.int16),
        slot_state=np.full((batch_size, players, slots), layout.CLEARED, np.int8),
        draw_pile=np.zeros((batch_size, deck_size), np.int16),
        discard_pile=np.zeros((batch_size, deck_size), np.int16),
        game=game,
        seat=np.zeros((batch_size, players, layout.NUM_SEAT_FIELDS), np.int32),
        rng=np.zeros(batch_size, np.uint64),
        final_grid=np.zeros((batch_size, players, slots), np.int16),
        final_slot_state=np.full((batch_size, players, slots), layout.CLEARED, np.int8),
    )


def seed_to_stream(seed: int) -> np.uint64:
    """The 64-bit stream state of a game started from an integer seed."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"a game seed must be a non-negative int, got {seed!r}")
    return np.random.SeedSequence(int(seed)).generate_state(1, np.uint64)[0]


def _game_streams(seeds, count: int) -> np.ndarray:
    if isinstance(seeds, np.random.Generator):
        return seeds.integers(0, 2**64, size=count, dtype=np.uint64, endpoint=False)
    if isinstance(seeds, (int, np.integer)):
        seeds = [seeds]
    seeds = list(seeds)
    if len(seeds) != count:
        raise ValueError(f"got {len(seeds)} seeds for {count} games")
    return np.array([seed_to_stream(seed) for seed in seeds], dtype=np.uint64)


def reset(
    state: BatchState,
    seeds,
    which=None,
    stacked_deck=None,
) -> None:
    """Start new games.

    Args:
        state: The batch.
        seeds: A `np.random.Generator` (one 64-bit stream drawn per game), or one
            non-negative int seed per started game (the same seed always deals the same
            game, whatever the batch).
        which: Batch indices to start (int array); all games when None.
        stacked_deck: Optional int sequence of length D, the deck in dealing order for the
            first round (seat 0's slots 0..S-1 first, then seat 1, ..., then the first
            discard, then the draw pile from top down). Later rounds shuffle as usual.

    Raises:
        ValueError: Wrong number of seeds, a bad seed, or a stacked deck that is not a
            permutation of the rules' deck.
    """
    which = np.arange(state.batch_size) if which is None else np.asarray(which, np.int64)
    if which.ndim != 1 or (which.size and (which.min() < 0 or which.max() >= state.batch_size)):
        raise ValueError(f"which must list batch indices in 0..{state.batch_size - 1}")
    streams = _game_streams(seeds, which.size)
    stacked = state.deck[:0]
    if stacked_deck is not None:
        stacked = np.asarray(stacked_deck, dtype=np.int16)
        if stacked.shape != state.deck.shape or not np.array_equal(
            np.sort(stacked), state.deck
        ):
            raise ValueError("stacked_deck must be a permutation of the rules' deck")
    with quiet_overflow():
        kernels.start_games(*state.arrays, which.astype(np.int64), streams, stacked)


def legal_action_mask(state: BatchState, out: np.ndarray | None = None) -> np.ndarray:
    """Legal actions of every game: bool array of shape (B, 2S+3).

    This (through `kernels.legal_mask_into`) is the only source of legality. Games that
    are over have an all-False row.
    """
    if out is None:
        out = np.empty((state.batch_size, state.num_actions), dtype=np.bool_)
    kernels.legal_masks(state.slot_state, state.game, state.params, out)
    return out


def step(state: BatchState, actions, events: np.ndarray | None = None) -> np.ndarray:
    """Apply one action per game (`NO_ACTION` = -1 leaves a game untouched).

    Args:
        state: The batch, changed in place.
        actions: int array of shape (B,).
        events: Optional int32 (B,) array to write the events into (saves an allocation).

    Returns:
        int32 array (B,) of event bits per game: EVENT_ROUND_ENDED, EVENT_GAME_ENDED,
        EVENT_TRUNCATED (from `skyjo_env.core.layout`).

    Raises:
        IllegalActionError: Some action is not legal; no game was changed. The message
            names the game, the action, the phase and why it is illegal.
    """
    if not (
        type(actions) is np.ndarray
        and actions.dtype == np.int64
        and actions.shape == (state.batch_size,)
    ):
        actions = _as_action_array(actions, state.batch_size)
    if events is None:
        events = np.empty(state.batch_size, np.int32)
    if JIT_DISABLED:
        with quiet_overflow():
            bad = kernels.step_batch(*state.arrays, actions, events)
    else:  # the hot path: no context manager to enter
        bad = kernels.step_batch(*state.arrays, actions, events)
    if bad >= 0:
        raise IllegalActionError(illegal_action_message(state, bad, int(actions[bad])))
    return events


def _as_action_array(actions, batch_size: int) -> np.ndarray:
    array = np.asarray(actions)
    if array.shape != (batch_size,):
        raise ValueError(f"actions must have shape ({batch_size},), got {array.shape}")
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"actions must be integers, got dtype {array.dtype}")
    return array.astype(np.int64)


_KINDS_BY_PHASE = {
    Phase.INITIAL_REVEAL: (ActionKind.REVEAL,),
    Phase.CHOOSE_SOURCE: (ActionKind.DRAW, ActionKind.TAKE_DISCARD),
    Phase.PLACE_DRAWN: (ActionKind.PLACE, ActionKind.DISCARD_DRAWN),
    Phase.PLACE_DISCARD: (ActionKind.PLACE,),
    Phase.REVEAL_AFTER_DISCARD: (ActionKind.REVEAL,),
    Phase.GAME_OVER: (),
}


def illegal_action_reason(state: BatchState, b: int, action: int) -> str:
    """Why ``action`` is illegal in game ``b`` (call only for a masked-out action)."""
    rules = state.rules
    if not 0 <= action < state.num_actions:
        return f"action ids run from 0 to {state.num_actions - 1} (-1 leaves a game untouched)"
    phase = Phase(int(state.game[b, layout.PHASE]))
    kind, slot = decode_action(action, rules.num_slots)
    if phase == Phase.GAME_OVER:
        return "the game is over; reset it to play again"
    allowed = _KINDS_BY_PHASE[phase]
    if kind not in allowed:
        if phase == Phase.PLACE_DISCARD and kind == ActionKind.DISCARD_DRAWN:
            return "a card taken from the discard pile must be placed in the grid, not put back"
        names = " or ".join(k.name for k in allowed)
        return f"this phase needs {names}"
    seat = int(state.game[b, layout.CURRENT])
    if slot is not None:
        slot_state = int(state.slot_state[b, seat, slot])
        if kind == ActionKind.REVEAL and slot_state != layout.HIDDEN:
            what = "face up" if slot_state == layout.FACE_UP else "cleared"
            return f"slot {slot} is {what}; only a face-down card can be revealed"
        if kind == ActionKind.PLACE and slot_state == layout.CLEARED:
            return f"slot {slot} is cleared (its line was eliminated)"
    if kind == ActionKind.TAKE_DISCARD and state.game[b, layout.DISCARD_SIZE] == 0:
        return "the discard pile is empty"
    return "the legal-action mask forbids it"


def illegal_action_message(state: BatchState, b: int, action: int) -> str:
    """Full error text for an illegal ``action`` in game ``b``."""
    rules = state.rules
    phase = Phase(int(state.game[b, layout.PHASE]))
    if 0 <= action < state.num_actions:
        name = describe_action(action, rules.num_slots, rules.cols)
    else:
        name = f"action {action}"
    where = f"game {b}, seat {int(state.game[b, layout.CURRENT])}, phase {phase.name}"
    return f"illegal action {name} ({where}): {illegal_action_reason(state, b, action)}"


def unseen_counts(state: BatchState, seat: int | np.ndarray) -> np.ndarray:
    """Copies of each card value whose whereabouts ``seat`` cannot know.

    Everything on the discard pile and every face-up grid card is public, and the seat
    knows the card it holds; the rest (draw pile, all face-down cards, another seat's
    held card) is unseen. Cards seen once and reshuffled into the draw pile count as
    unseen again, since their position is unknown.

    Args:
        state: The batch.
        seat: The observing seat, one int or int array (B,).

    Returns:
        int32 array (B, V), V = number of distinct card values (`rules.card_values`).
    """
    seats = np.broadcast_to(np.asarray(seat, np.int64), (state.batch_size,))
    out = np.empty((state.batch_size, state.rules.card_values.size), np.int32)
    kernels.unseen_counts_batch(
        state.grid,
        state.slot_state,
        state.discard_pile,
        state.game,
        state.rules.card_values,
        state.rules.card_counts,
        np.ascontiguousarray(seats),
        out,
    )
    return out


def winners(state: BatchState, b: int) -> list[int]:
    """Seats with the lowest total in game ``b`` (several on a shared win)."""
    totals = state.seat[b, :, layout.TOTAL]
    return [int(p) for p in np.flatnonzero(totals == totals.min())]


__all__ = [
    "NO_ACTION",
    "BatchState",
    "IllegalActionError",
    "illegal_action_message",
    "illegal_action_reason",
    "legal_action_mask",
    "new_batch",
    "reset",
    "rules_params",
    "seed_to_stream",
    "step",
    "unseen_counts",
    "winners",
]
