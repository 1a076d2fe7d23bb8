"""Engine states rebuilt from observations: what a search agent may start its rollouts from.

An agent gets observation vectors, never the true `BatchState`. `state_from_observations`
turns each observation back into a whole-deck engine game whose seat 0 is the observer
(observations are relative, so the observer's seats come out rotated: relative seat ``k``
is engine seat ``k``). Everything the observation shows is copied; everything it hides
is filled in a fixed, canonical way that depends on the observation only:

- face-up and cleared slots, discard top, a known held card, phase, current seat,
  finisher, totals, pile sizes and the turn counter come from the observation;
- the discard pile below its top: its multiset is the deck minus the face-up grid cards,
  minus a known held card, minus the unseen cards (the observation's card counting), laid
  out in sorted order. Its order never matters for play: only the top can be taken, and
  both ``reshuffle_keep_top`` and ``reshuffle_all`` shuffle the cards below (all of them,
  for ``reshuffle_all``) before anyone sees them again;
- face-down cards, the draw pile and a held card the observer cannot know: the unseen
  cards in sorted order. `skyjo_env.core.sample_information_set` then redeals exactly
  these positions at random, so the canonical fill is never played as such.

Fields the observation does not carry, and the values chosen (safe for a search that stops
at the end of the current round):

- ``ROUND`` (rounds completed) = 0: it only matters at a round's end (``max_rounds`` and
  the next round's starter), where the rollouts stop;
- ``PREV_FINISHER`` = -1 and ``STARTER`` = 0: read only when the next round starts;
- ``TURN`` = the observed turn count, exact below ``100 * P`` turns; once the observation
  is capped at 1 the smallest consistent value ``100 * P`` is used, so a rollout may miss a
  turn-cap truncation (``max_turns_per_round``) that the true game would hit;
- ``REVEALS_DONE`` = the number of face-up cards while in ``INITIAL_REVEAL`` (no card is
  eliminated before the setup ends). The engine hands initial reveals to absolute seats
  ``0, 1, ...`` in turn, which the relative seat order does not preserve, so a rebuilt
  setup phase re-encodes exactly but is not meant to be played on (the search agent lets
  its base agent make initial reveals);
- per-seat counters other than the totals, the last round's grids, the random streams and
  ``DECISIONS``: zero (never read within a round; the sampler draws fresh streams).
"""

from __future__ import annotations

import numpy as np

from skyjo_env.core import layout
from skyjo_env.core.actions import Phase
from skyjo_env.core.engine import BatchState, new_batch
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ROUND_TURNS_SCALE, ObservationLayout


class ObservationMismatchError(ValueError):
    """An observation that no game under the given rules can produce."""


def _value_indices(rules: SkyjoRules, values: np.ndarray, what: str, row: int) -> np.ndarray:
    """Indices into ``rules.card_values`` of ``values`` (float card units)."""
    card_values = rules.card_values
    indices = np.searchsorted(card_values, values)
    inside = indices < card_values.size
    if not inside.all() or not np.array_equal(card_values[indices], values):
        bad = values[~inside | (card_values[np.minimum(indices, card_values.size - 1)] != values)]
        raise ObservationMismatchError(
            f"observation {row}: {what} holds value {bad[0]:g}, which is not in the deck"
        )
    return indices


def _fill_row(state: BatchState, b: int, piece: dict[str, np.ndarray], rules: SkyjoRules) -> None:
    """Write the hidden parts of game ``b`` (discard pile, face-down cards, draw pile)."""
    card_values = rules.card_values
    face_up = state.slot_state[b] == layout.FACE_UP
    visible = _value_indices(rules, state.grid[b][face_up].astype(np.float64), "a grid", b)
    located = np.bincount(visible, minlength=card_values.size)
    held_known = bool(piece["has_held_card"][b])
    if held_known:
        located[_value_indices(rules, piece["held_card"][b : b + 1], "the held card", b)] += 1
    unseen = piece["unseen_counts"][b]
    discard_counts = rules.card_counts - located - unseen
    discard_size = int(piece["discard_pile_size"][b])
    if discard_counts.min() < 0 or int(discard_counts.sum()) != discard_size:
        raise ObservationMismatchError(
            f"observation {b}: the deck minus the located and unseen cards leaves "
            f"{int(discard_counts.sum())} cards for a discard pile of {discard_size}"
        )
    if discard_size:
        top = _value_indices(rules, piece["discard_top"][b : b + 1], "the discard top", b)[0]
        if discard_counts[top] == 0:
            raise ObservationMismatchError(
                f"observation {b}: discard top {card_values[top]} is not among the cards "
                "the discard pile can hold"
            )
        discard_counts[top] -= 1
        below = np.repeat(card_values, discard_counts)
        state.discard_pile[b, : discard_size - 1] = below
        state.discard_pile[b, discard_size - 1] = card_values[top]
    pool = np.repeat(card_values, unseen).astype(np.int16)
    hidden = state.slot_state[b] == layout.HIDDEN
    held_unknown = (
        state.game[b, layout.PHASE] == Phase.PLACE_DRAWN and state.game[b, layout.CURRENT] != 0
    )
    draw_size = int(piece["draw_pile_size"][b])
    positions = int(hidden.sum()) + draw_size + int(held_unknown)
    if pool.size != positions:
        raise ObservationMismatchError(
            f"observation {b}: {pool.size} unseen cards for {positions} unknown positions "
            "(face-down slots, draw pile, a held card drawn by another seat)"
        )
    used = int(hidden.sum())
    state.grid[b][hidden] = pool[:used]
    if held_unknown:
        state.game[b, layout.HELD] = pool[used]
        used += 1
    state.draw_pile[b, :draw_size] = pool[used:]
    state.game[b, layout.DRAW_SIZE] = draw_size
    state.game[b, layout.DISCARD_SIZE] = discard_size


def state_from_observations(rules: SkyjoRules, observations: np.ndarray) -> BatchState:
    """Rebuild one engine game per observation, its observer in seat 0.

    The rebuilt game re-encodes to the same observation from seat 0
    (``ObservationEncoder(rules).encode(state, 0)``) and holds the rules' whole deck, so
    `skyjo_env.core.sample_information_set(state, b, 0, ...)` samples the observer's
    information set from it. See the module docstring for the hidden and unknown fields.

    Args:
        rules: The rules the observations were encoded under.
        observations: float32 (N, O) observation vectors (`skyjo_env.encoding`), N >= 1.

    Returns:
        A `BatchState` of N games.

    Raises:
        ObservationMismatchError: (a `ValueError`) wrong shape, a game-over observation,
            or contents no game under these rules can show (values outside the deck,
            inconsistent card counts).
    """
    obs_layout = ObservationLayout(rules)
    obs = np.asarray(observations)
    if obs.ndim != 2 or obs.shape[0] < 1 or obs.shape[1] != obs_layout.size:
        raise ObservationMismatchError(
            f"observations must have shape (N >= 1, {obs_layout.size}) for these rules, "
            f"got {obs.shape}"
        )
    piece = obs_layout.decode(obs)
    n, players = obs.shape[0], rules.num_players
    over = np.flatnonzero(piece["phase"] == Phase.GAME_OVER)
    if over.size:
        raise ObservationMismatchError(f"observation {over[0]} is of a game that is over")
    hidden = np.concatenate([piece["own_hidden"][:, None], piece["opponent_hidden"]], axis=1)
    cleared = np.concatenate([piece["own_cleared"][:, None], piece["opponent_cleared"]], axis=1)
    both = np.flatnonzero((hidden & cleared).any(axis=(1, 2)))
    if both.size:
        raise ObservationMismatchError(f"observation {both[0]}: a slot is both hidden and cleared")
    state = new_batch(rules, n)
    values = np.concatenate([piece["own_values"][:, None], piece["opponent_values"]], axis=1)
    state.slot_state[:] = np.where(
        hidden, layout.HIDDEN, np.where(cleared, layout.CLEARED, layout.FACE_UP)
    )
    state.grid[:] = np.where(state.slot_state == layout.FACE_UP, values, 0).astype(np.int16)
    game = state.game
    game[:, layout.PHASE] = piece["phase"]
    game[:, layout.CURRENT] = piece["current_seat"]
    game[:, layout.HELD] = np.where(piece["has_held_card"], piece["held_card"], 0)
    game[:, layout.FINISHER] = piece["finisher"]
    game[:, layout.PREV_FINISHER] = -1
    cap = int(ROUND_TURNS_SCALE) * players
    game[:, layout.TURN] = np.minimum(piece["round_turns"], cap)
    in_setup = piece["phase"] == Phase.INITIAL_REVEAL
    face_up = (state.slot_state == layout.FACE_UP).sum(axis=(1, 2))
    game[:, layout.REVEALS_DONE] = np.where(in_setup, face_up, 0)
    state.seat[:, :, layout.TOTAL] = piece["total_scores"]
    for b in range(n):
        _fill_row(state, b, piece, rules)
    return state


__all__ = ["ObservationMismatchError", "state_from_observations"]
