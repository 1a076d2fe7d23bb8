"""Observation encoder: what one seat may know, as one flat float32 vector.

The vector is made of named pieces, in this order (``S`` slots, ``P`` players, ``V``
distinct card values; "relative" means seat order starting at the observer, so index 0 is
always the observer itself and index 1 the next seat to play after it):

==========================  ===========  ======================================================
piece                       size         content
==========================  ===========  ======================================================
``own_values``              S            own face-up card values / value_scale (0 elsewhere)
``own_hidden``              S            1 where own slot is face down
``own_cleared``             S            1 where own slot is cleared
``opponent_values``         (P-1)·S      each opponent's face-up values / value_scale, relative
``opponent_hidden``         (P-1)·S      1 where that opponent's slot is face down
``opponent_cleared``        (P-1)·S      1 where that opponent's slot is cleared
``discard_top``             1            top of the discard pile / value_scale
``held_card``               1            held card / value_scale, when the observer may know it
``has_held_card``           1            1 when ``held_card`` is meaningful
``phase``                   6            one-hot `Phase`
``current_seat``            P            one-hot seat to act, relative
``unseen_counts``           V            copies of each value the observer cannot place,
                                         / copies in the deck (card counting)
``draw_pile_size``          1            cards in the draw pile / deck size
``discard_pile_size``       1            cards in the discard pile / deck size
``visible_round_scores``    P            sum of each seat's face-up cards / 100, relative
``total_scores``            P            total scores / target_score, relative
``final_lap``               1            1 once someone has finished this round
``finisher``                P            one-hot finisher, relative (zeros before)
``round_turns``             1            turns played this round / (100 * P), at most 1
==========================  ===========  ======================================================

``value_scale`` is the largest absolute card value of the deck (12 officially). The
held card is known to the observer when the observer drew it, and to everyone when it was
taken from the discard pile. Nothing else about face-down cards or the draw pile order
enters the vector, so permuting them leaves every observation unchanged.

`ObservationLayout.describe()` maps piece names to slices; `decode()` turns a batch of
vectors back into named arrays in card units for rule-based agents.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skyjo_env.core import layout
from skyjo_env.core.actions import Phase
from skyjo_env.core.engine import BatchState
from skyjo_env.core.jit import jit
from skyjo_env.core.kernels import unseen_counts_into, value_index_table
from skyjo_env.core.rules import MAX_ROUNDS, SkyjoRules

#: Bump when the layout changes: checkpoints record it and refuse a mismatch.
OBSERVATION_VERSION = 2

NUM_PHASES = len(Phase)
ROUND_SCORE_SCALE = 100.0
#: round_turns = turns / (ROUND_TURNS_SCALE * players), clipped to 1
ROUND_TURNS_SCALE = 100.0

_PLACE_DRAWN = int(Phase.PLACE_DRAWN)
_PLACE_DISCARD = int(Phase.PLACE_DISCARD)


@dataclass(frozen=True)
class ObservationLayout:
    """Slices of the observation vector for one rules config."""

    rules: SkyjoRules

    @property
    def pieces(self) -> list[tuple[str, int]]:
        """``(name, size)`` of every piece, in vector order."""
        players, slots = self.rules.num_players, self.rules.num_slots
        values = self.rules.card_values.size
        others = (players - 1) * slots
        return [
            ("own_values", slots),
            ("own_hidden", slots),
            ("own_cleared", slots),
            ("opponent_values", others),
            ("opponent_hidden", others),
            ("opponent_cleared", others),
            ("discard_top", 1),
            ("held_card", 1),
            ("has_held_card", 1),
            ("phase", NUM_PHASES),
            ("current_seat", players),
            ("unseen_counts", values),
            ("draw_pile_size", 1),
            ("discard_pile_size", 1),
            ("visible_round_scores", players),
            ("total_scores", players),
            ("final_lap", 1),
            ("finisher", players),
            ("round_turns", 1),
        ]

    @property
    def size(self) -> int:
        """Length of the observation vector."""
        return sum(size for _, size in self.pieces)

    @property
    def value_scale(self) -> float:
        """Card values are divided by this (the largest absolute card value, at least 1)."""
        return float(max(1, int(np.abs(self.rules.card_values).max())))

    def describe(self) -> dict[str, slice]:
        """Piece name -> slice of the observation vector."""
        slices, start = {}, 0
        for name, size in self.pieces:
            slices[name] = slice(start, start + size)
            start += size
        return slices

    def decode(self, observations: np.ndarray) -> dict[str, np.ndarray]:
        """Named arrays, in card units, from a batch of observations.

        Args:
            observations: float32 (N, size).

        Returns:
            Card values as float64 in card units: ``own_values`` (N, S),
            ``opponent_values`` (N, P-1, S), ``discard_top`` (N,), ``held_card`` (N,);
            bool masks ``own_hidden``, ``own_cleared`` (N, S), ``opponent_hidden``,
            ``opponent_cleared`` (N, P-1, S), ``has_held_card``, ``final_lap`` (N,);
            ``phase`` (N,) int; ``current_seat`` and ``finisher`` (N,) relative seats
            (-1 for no finisher); ``unseen_counts`` (N, V) int; ``draw_pile_size``,
            ``discard_pile_size`` (N,) int; ``visible_round_scores``, ``total_scores``
            (N, P) in points; ``round_turns`` (N,) int, turns played this round (exact
            below ``100 * P``).
        """
        obs = np.asarray(observations, dtype=np.float64)
        if obs.ndim == 1:
            obs = obs[None]
        n = obs.shape[0]
        rules = self.rules
        players, slots = rules.num_players, rules.num_slots
        cut = {name: obs[:, piece] for name, piece in self.describe().items()}
        scale = self.value_scale
        counts = rules.card_counts
        finisher_hot = cut["finisher"]
        return {
            "own_values": np.rint(cut["own_values"] * scale),
            "own_hidden": cut["own_hidden"] > 0.5,
            "own_cleared": cut["own_cleared"] > 0.5,
            "opponent_values": np.rint(cut["opponent_values"] * scale).reshape(n, players - 1, slots),
            "opponent_hidden": (cut["opponent_hidden"] > 0.5).reshape(n, players - 1, slots),
            "opponent_cleared": (cut["opponent_cleared"] > 0.5).reshape(n, players - 1, slots),
            "discard_top": np.rint(cut["discard_top"][:, 0] * scale),
            "held_card": np.rint(cut["held_card"][:, 0] * scale),
            "has_held_card": cut["has_held_card"][:, 0] > 0.5,
            "phase": cut["phase"].argmax(axis=1),
            "current_seat": cut["current_seat"].argmax(axis=1),
            "unseen_counts": np.rint(cut["unseen_counts"] * counts).astype(np.int64),
            "draw_pile_size": np.rint(cut["draw_pile_size"][:, 0] * rules.deck_size).astype(np.int64),
            "discard_pile_size": np.rint(cut["discard_pile_size"][:, 0] * rules.deck_size).astype(
                np.int64
            ),
            "visible_round_scores": np.rint(cut["visible_round_scores"] * ROUND_SCORE_SCALE),
            "total_scores": np.rint(cut["total_scores"] * rules.target_score),
            "final_lap": cut["final_lap"][:, 0] > 0.5,
            "finisher": np.where(finisher_hot.max(axis=1) > 0.5, finisher_hot.argmax(axis=1), -1),
            "round_turns": np.rint(cut["round_turns"][:, 0] * ROUND_TURNS_SCALE * players).astype(
                np.int64
            ),
        }


@jit
def encode_into(b, observer, grid, slot_state, discard_pile, game, seat, card_values,
                card_counts, table, value_scale, deck_size, target_score, unseen, out):
    """Write seat ``observer``'s observation of game ``b`` into ``out`` (float32, (size,)).

    ``unseen`` is scratch space of shape (V,). The order of writes is the order of
    `ObservationLayout.pieces`.
    """
    players = grid.shape[1]
    slots = grid.shape[2]
    out[:] = 0.0
    i = 0
    # own grid, then opponents in relative seat order, in three blocks: values, hidden, cleared
    for block in range(2):
        first = 0 if block == 0 else 1
        last = 1 if block == 0 else players
        width = (last - first) * slots
        for k in range(first, last):
            p = (observer + k) % players
            base = i + (k - first) * slots
            for s in range(slots):
                state = slot_state[b, p, s]
                if state == layout.FACE_UP:
                    out[base + s] = grid[b, p, s] / value_scale
                elif state == layout.HIDDEN:
                    out[base + width + s] = 1.0
                elif state == layout.CLEARED:
                    out[base + 2 * width + s] = 1.0
        i += 3 * width
    phase = game[b, layout.PHASE]
    if game[b, layout.DISCARD_SIZE] > 0:
        out[i] = discard_pile[b, game[b, layout.DISCARD_SIZE] - 1] / value_scale
    i += 1
    if phase == _PLACE_DISCARD or (phase == _PLACE_DRAWN and game[b, layout.CURRENT] == observer):
        out[i] = game[b, layout.HELD] / value_scale
        out[i + 1] = 1.0
    i += 2
    out[i + phase] = 1.0
    i += 6
    out[i + (game[b, layout.CURRENT] - observer) % players] = 1.0
    i += players
    unseen_counts_into(b, observer, grid, slot_state, discard_pile, game, card_values,
                       card_counts, table, unseen)
    for v in range(card_values.shape[0]):
        out[i + v] = unseen[v] / card_counts[v]
    i += card_values.shape[0]
    out[i] = game[b, layout.DRAW_SIZE] / deck_size
    out[i + 1] = game[b, layout.DISCARD_SIZE] / deck_size
    i += 2
    for k in range(players):
        p = (observer + k) % players
        visible = 0
        for s in range(slots):
            if slot_state[b, p, s] == layout.FACE_UP:
                visible += grid[b, p, s]
        out[i + k] = visible / 100.0
        out[i + players + k] = seat[b, p, layout.TOTAL] / target_score
    i += 2 * players
    finisher = game[b, layout.FINISHER]
    if finisher >= 0:
        out[i] = 1.0
        out[i + 1 + (finisher - observer) % players] = 1.0
    i += 1 + players
    out[i] = min(1.0, game[b, layout.TURN] / (ROUND_TURNS_SCALE * players))


@jit
def encode_batch(grid, slot_state, discard_pile, game, seat, card_values, card_counts,
                 value_scale, deck_size, target_score, observers, out):
    """Observations of every game from ``observers`` (int64 (B,)) into ``out`` (B, size)."""
    table = value_index_table(card_values)
    unseen = np.empty(card_values.shape[0], np.int32)
    for b in range(game.shape[0]):
        encode_into(b, observers[b], grid, slot_state, discard_pile, game, seat, card_values,
                    card_counts, table, value_scale, deck_size, target_score, unseen, out[b])


class ObservationEncoder:
    """Encodes a `BatchState` from chosen seats' points of view.

    Example::

        encoder = ObservationEncoder(state.rules)
        obs = encoder.encode(state, state.current_player)   # float32 (B, encoder.size)
    """

    def __init__(self, rules: SkyjoRules):
        self.layout = ObservationLayout(rules)
        self.size = self.layout.size
        self._card_values = rules.card_values
        self._card_counts = rules.card_counts
        self._value_scale = self.layout.value_scale
        self._deck_size = float(rules.deck_size)
        self._target = float(rules.target_score)

    def encode(self, state: BatchState, observers, out: np.ndarray | None = None) -> np.ndarray:
        """Observation of each game from its observer's seat.

        Args:
            state: The batch (its rules must match the encoder's).
            observers: int seat per game, shape (B,) (or one int for all).
            out: Optional float32 (B, size) array to fill.

        Returns:
            float32 array of shape (B, size).
        """
        if state.rules != self.layout.rules:
            raise ValueError("the encoder was built for other rules than this state's")
        observers = np.broadcast_to(np.asarray(observers, np.int64), (state.batch_size,))
        if out is None:
            out = np.empty((state.batch_size, self.size), np.float32)
        encode_batch(
            state.grid,
            state.slot_state,
            state.discard_pile,
            state.game,
            state.seat,
            self._card_values,
            self._card_counts,
            self._value_scale,
            self._deck_size,
            self._target,
            np.ascontiguousarray(observers),
            out,
        )
        return out

    def describe(self) -> dict[str, slice]:
        """Piece name -> slice (see `ObservationLayout.describe`)."""
        return self.layout.describe()

    def decode(self, observations: np.ndarray) -> dict[str, np.ndarray]:
        """Named arrays in card units (see `ObservationLayout.decode`)."""
        return self.layout.decode(observations)


def view_arguments(batch, encoder: ObservationEncoder) -> tuple:
    """The state and encoder arguments that the compiled views (`observe_into`, and the
    batched helpers of `skyjo_env.learner_games`) take after their own leading ones:
    ``grid, slot_state, discard_pile, game, seat, params, card_values, card_counts,
    value table, value_scale, deck_size, target_score, unseen scratch``."""
    rules = batch.rules
    return (
        batch.grid,
        batch.slot_state,
        batch.discard_pile,
        batch.game,
        batch.seat,
        batch.params,
        rules.card_values,
        rules.card_counts,
        value_index_table(rules.card_values),
        encoder.layout.value_scale,
        float(rules.deck_size),
        float(rules.target_score),
        np.empty(rules.card_values.size, np.int32),
    )


def observation_bounds(rules: SkyjoRules) -> tuple[np.ndarray, np.ndarray]:
    """Finite lower and upper bounds of every entry of the observation vector.

    Card values lie in [-1, 1] after scaling, indicators and fractions in [0, 1]; visible
    round scores within the sums of S extreme cards; total scores within what
    ``max_rounds`` (or, without a cap, 1000 rounds) of extreme, penalised round scores can
    reach. The bounds are loose on purpose: they only have to contain every observation.

    Returns:
        ``(low, high)``, float32 arrays of shape (observation size,).
    """
    obs_layout = ObservationLayout(rules)
    slices = obs_layout.describe()
    # every other piece is an indicator or a fraction in [0, 1]; the PettingZoo, Gymnasium
    # and SB3 checkers in the tests verify the bounds on played games
    low = np.zeros(obs_layout.size, np.float32)
    high = np.ones(obs_layout.size, np.float32)
    for name in ("own_values", "opponent_values", "discard_top", "held_card"):
        low[slices[name]] = -1.0
    slots = rules.num_slots
    min_card, max_card = int(rules.card_values.min()), int(rules.card_values.max())
    low[slices["visible_round_scores"]] = min(0, slots * min_card) / ROUND_SCORE_SCALE
    high[slices["visible_round_scores"]] = max(0, slots * max_card) / ROUND_SCORE_SCALE
    m, f = rules.finisher_multiplier, rules.finisher_flat_penalty

    def penalised(s: int) -> list[int]:
        return [s, s * m, s + f, (s + f) * m, s * m + f]

    round_low = min(0, *penalised(slots * min_card))
    round_high = max(0, *penalised(slots * max_card))
    rounds = rules.max_rounds or MAX_ROUNDS
    target = rules.target_score
    low[slices["total_scores"]] = rounds * round_low / target
    # a game ends in the round a total reaches the target: below target + one round
    high[slices["total_scores"]] = (target + round_high) / target
    return low, high
