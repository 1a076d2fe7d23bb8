"""Rule-based baselines: ``greedy`` (thresholds) and ``ev`` (expected value + card counting).

Both act only from the observation vector and the legal-action mask (the Agent protocol
of `skyjo_env.protocol`), decoded inside compiled kernels with the slices of
`skyjo_env.encoding.ObservationLayout`: they cannot see a face-down card or the draw pile
order, because the observation does not contain them.

greedy
    * Initial reveals and reveals after a discard: the first face-down slot.
    * Choose source: take the discard top if it is at most ``take_threshold`` (4) or
      lower than its highest face-up card minus ``improve_margin`` (6); else draw.
    * Taken discard card: replace the highest face-up card if that is higher, else the
      first face-down slot.
    * Drawn card: if it is at most ``keep_threshold`` (4), place it like a taken card;
      else if it is lower than the highest face-up card, replace that; else discard it
      and reveal.

ev
    Values a face-down card at the mean ``mu`` of the cards it has not seen (card
    counting from the observation's ``unseen_counts``) and scores a grid by its expected
    sum minus a bonus for columns one card short of elimination (``pair_bonus`` times the
    points the elimination would remove, when a copy of the missing value is still
    unseen). Every placement and reveal is scored by the expected drop of that value,
    eliminations included; the reveal of a face-down card by its expectation over the
    unseen values. Draw or take: taking is worth the best placement of the discard top;
    drawing is worth the expectation, over the unseen values, of the best of placing the
    drawn card or discarding it and revealing. Going out: an action that would turn the
    last face-down card up (before anyone has finished) is scored with the finisher
    penalty it risks: the own final score is compared with each opponent's expected
    score (face-up sum + ``mu`` per face-down card - ``opponent_turn_gain``); if an
    opponent may end at or below it, the penalty is charged in full. Once a round has
    lasted ``patience`` (20) turns per player, that charge fades to nothing over the next
    10, so two cautious players cannot stall a round forever. The weights ``pair_bonus``
    = 0.4 and ``opponent_turn_gain`` = 9 were tuned in 2-player duels against earlier
    settings.
"""

from __future__ import annotations

import numpy as np

from skyjo_env.core.actions import Phase
from skyjo_env.core.engine import rules_params
from skyjo_env.core.jit import jit
from skyjo_env.core.kernels import penalised_score
from skyjo_env.core.layout import (
    P_COLS,
    P_COLUMN_ELIMINATION,
    P_CONDITION_LT,
    P_ONLY_IF_POSITIVE,
    P_PLAYERS,
    P_ROW_ELIMINATION,
    P_ROWS,
)
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ROUND_TURNS_SCALE, ObservationLayout

#: turns per player over which ev's fear of the finisher penalty fades after `patience`
PATIENCE_FADE = 10.0

_INITIAL_REVEAL = int(Phase.INITIAL_REVEAL)
_CHOOSE_SOURCE = int(Phase.CHOOSE_SOURCE)
_PLACE_DRAWN = int(Phase.PLACE_DRAWN)
_PLACE_DISCARD = int(Phase.PLACE_DISCARD)
_REVEAL_AFTER_DISCARD = int(Phase.REVEAL_AFTER_DISCARD)

# indices into the `offsets` array handed to the kernels
_OWN_VALUES, _OWN_HIDDEN, _OWN_CLEARED = 0, 1, 2
_OPP_VALUES, _OPP_HIDDEN, _OPP_CLEARED = 3, 4, 5
_DISCARD_TOP, _HELD_CARD, _PHASE, _UNSEEN, _FINAL_LAP, _ROUND_TURNS = 6, 7, 8, 9, 10, 11
_OFFSET_PIECES = (
    "own_values",
    "own_hidden",
    "own_cleared",
    "opponent_values",
    "opponent_hidden",
    "opponent_cleared",
    "discard_top",
    "held_card",
    "phase",
    "unseen_counts",
    "final_lap",
    "round_turns",
)

def _layout_arrays(rules: SkyjoRules) -> tuple[np.ndarray, np.ndarray, float]:
    """``(offsets, geometry, value_scale)``: where each piece starts in the observation,
    the rules as the engine's kernels read them (`rules_params`), and the value scale."""
    layout = ObservationLayout(rules)
    slices = layout.describe()
    offsets = np.array([slices[name].start for name in _OFFSET_PIECES], dtype=np.int64)
    return offsets, rules_params(rules), layout.value_scale


def _check_inputs(observations, action_masks, size: int):
    observations = np.ascontiguousarray(observations, dtype=np.float32)
    action_masks = np.ascontiguousarray(action_masks, dtype=np.bool_)
    if observations.ndim == 1:
        observations, action_masks = observations[None], action_masks.reshape(1, -1)
    if observations.shape[1] != size:
        raise ValueError(
            f"observations have {observations.shape[1]} features; these rules give {size}"
        )
    if not action_masks.any(axis=1).all():
        raise ValueError("every row of action_masks needs at least one legal action")
    return observations, action_masks


# ---------------------------------------------------------------- decoding


@jit
def _card(obs, n, index, scale):
    return np.floor(obs[n, index] * scale + 0.5)


@jit
def _own_grid(obs, n, offsets, slots, scale, values, hidden, cleared):
    for s in range(slots):
        values[s] = _card(obs, n, offsets[_OWN_VALUES] + s, scale)
        hidden[s] = obs[n, offsets[_OWN_HIDDEN] + s] > 0.5
        cleared[s] = obs[n, offsets[_OWN_CLEARED] + s] > 0.5


@jit
def _phase(obs, n, offsets):
    best = 0
    for k in range(6):
        if obs[n, offsets[_PHASE] + k] > obs[n, offsets[_PHASE] + best]:
            best = k
    return best


@jit
def _first_legal(mask_row, start, count):
    for a in range(start, start + count):
        if mask_row[a]:
            return a
    return -1


# ---------------------------------------------------------------- greedy


@jit
def _greedy_place_slot(values, hidden, cleared, slots, card):
    """Replace the highest face-up card above ``card``, else the first face-down slot."""
    best, best_value = -1, -1e9
    for s in range(slots):
        if not hidden[s] and not cleared[s] and values[s] > card and values[s] > best_value:
            best, best_value = s, values[s]
    if best >= 0:
        return best
    for s in range(slots):
        if hidden[s]:
            return s
    return -1


@jit
def greedy_actions(obs, masks, offsets, slots, scale, take_threshold, keep_threshold,
                   improve_margin, out):
    """Greedy decisions for every row; see the module docstring."""
    values = np.empty(slots, np.float64)
    hidden = np.empty(slots, np.bool_)
    cleared = np.empty(slots, np.bool_)
    for n in range(obs.shape[0]):
        mask = masks[n]
        phase = _phase(obs, n, offsets)
        _own_grid(obs, n, offsets, slots, scale, values, hidden, cleared)
        highest = -1e9
        for s in range(slots):
            if not hidden[s] and not cleared[s] and values[s] > highest:
                highest = values[s]
        action = -1
        if phase == _CHOOSE_SOURCE:
            top = _card(obs, n, offsets[_DISCARD_TOP], scale)
            take = top <= take_threshold or top < highest - improve_margin
            action = slots + 1 if take and mask[slots + 1] else slots
        elif phase == _PLACE_DISCARD or phase == _PLACE_DRAWN:
            card = _card(obs, n, offsets[_HELD_CARD], scale)
            slot = _greedy_place_slot(values, hidden, cleared, slots, card)
            if phase == _PLACE_DRAWN and card > keep_threshold:
                slot = -1
                if card < highest:
                    slot = _greedy_place_slot(values, hidden, cleared, slots, card)
                    if hidden[slot]:
                        slot = -1
            action = slots + 2 + slot if slot >= 0 else 2 * slots + 2
        if action < 0 or not mask[action]:
            action = _first_legal(mask, 0, mask.shape[0])
        out[n] = action


class _CompiledHeuristic:
    """Shared plumbing of the heuristics: layout arrays, input checks, the kernel call.

    The rules are deterministic functions of the observation, so ``seed`` is accepted
    (the registry passes one to every agent) but unused.
    """

    def __init__(self, rules: SkyjoRules | None, name: str):
        self.name = name
        self.rules = rules or SkyjoRules()
        self.offsets, self.geometry, self.scale = _layout_arrays(self.rules)
        self.size = ObservationLayout(self.rules).size

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Actions for a batch: observations float32 (N, O), masks bool (N, A) -> int64 (N,)."""
        observations, action_masks = _check_inputs(observations, action_masks, self.size)
        out = np.empty(observations.shape[0], np.int64)
        self._decide(observations, action_masks, out)
        return out

    def _decide(self, observations: np.ndarray, action_masks: np.ndarray, out: np.ndarray):
        raise NotImplementedError


class GreedyAgent(_CompiledHeuristic):
    """The threshold player described in the module docstring (deterministic)."""

    def __init__(
        self,
        rules: SkyjoRules | None = None,
        seed: int | None = None,
        take_threshold: int = 4,
        keep_threshold: int = 4,
        improve_margin: int = 6,
        name: str = "greedy",
    ):
        super().__init__(rules, name)
        self.take_threshold = float(take_threshold)
        self.keep_threshold = float(keep_threshold)
        self.improve_margin = float(improve_margin)

    def _decide(self, observations, action_masks, out):
        greedy_actions(observations, action_masks, self.offsets, self.rules.num_slots,
                       self.scale, self.take_threshold, self.keep_threshold,
                       self.improve_margin, out)


# ---------------------------------------------------------------- ev


@jit
def _eliminate_at(values, hidden, cleared, slot, geometry):
    """Clear the lines through ``slot`` that are face up and equal (as the engine does)."""
    rows = geometry[P_ROWS]
    cols = geometry[P_COLS]
    col = slot % cols
    row = slot // cols
    column_done = geometry[P_COLUMN_ELIMINATION] != 0 and rows >= 2
    if column_done:
        for r in range(rows):
            s = r * cols + col
            if hidden[s] or cleared[s] or values[s] != values[slot]:
                column_done = False
                break
    row_done = geometry[P_ROW_ELIMINATION] != 0 and cols >= 2
    if row_done:
        for c in range(cols):
            s = row * cols + c
            if hidden[s] or cleared[s] or values[s] != values[slot]:
                row_done = False
                break
    if column_done:
        for r in range(rows):
            cleared[r * cols + col] = True
    if row_done:
        for c in range(cols):
            cleared[row * cols + c] = True


@jit
def _count_hidden(hidden, cleared):
    n = 0
    for s in range(hidden.shape[0]):
        if hidden[s] and not cleared[s]:
            n += 1
    return n


@jit
def _known_sum(values, hidden, cleared):
    total = 0.0
    for s in range(values.shape[0]):
        if not cleared[s] and not hidden[s]:
            total += values[s]
    return total


@jit
def _going_out_cost(mine, opponent_best, geometry, fear):
    """Extra expected cost of ending the round with own final score ``mine``, times
    ``fear`` (1 early in a round, fading to 0 once the round drags on)."""
    at_risk = opponent_best <= mine
    if geometry[P_CONDITION_LT] != 0:
        at_risk = opponent_best < mine
    if not at_risk:
        return 0.0
    if geometry[P_ONLY_IF_POSITIVE] != 0 and mine <= 0:
        return 0.0
    return fear * (penalised_score(mine, geometry) - mine)


@jit
def _column_terms(values, hidden, cleared, c, geometry, slot, card, mu, chance, low,
                  pair_bonus):
    """One column's share of `_grid_value`, with ``slot`` (-1: none) holding ``card``
    face up and the column eliminated if that completes it.

    Valid without row elimination, where a column is either whole or fully cleared.
    Returns ``(value, face-down count, face-up sum)``.
    """
    rows = geometry[P_ROWS]
    cols = geometry[P_COLS]
    if cleared[c]:
        return 0.0, 0, 0.0
    first = card if slot == c else values[c]
    complete = geometry[P_COLUMN_ELIMINATION] != 0 and rows >= 2
    estimate, face_down, face_up = 0.0, 0, 0.0
    for r in range(rows):
        s = r * cols + c
        is_hidden = hidden[s] and s != slot
        value = card if s == slot else values[s]
        if is_hidden or value != first:
            complete = False
        if is_hidden:
            estimate += mu
            face_down += 1
        else:
            estimate += value
            face_up += value
    if complete:
        return 0.0, 0, 0.0
    if geometry[P_COLUMN_ELIMINATION] != 0 and rows >= 3:
        for r0 in range(rows):
            s0 = r0 * cols + c
            if hidden[s0] and s0 != slot:
                continue
            w = card if s0 == slot else values[s0]
            same = 0
            for r in range(rows):
                s = r * cols + c
                if not (hidden[s] and s != slot) and (card if s == slot else values[s]) == w:
                    same += 1
            if same == rows - 1:
                if w > 0:
                    estimate -= pair_bonus * w * rows * min(1.0, 6.0 * chance[int(w) - low])
                break
    return estimate, face_down, face_up


@jit
def _grid_value(values, hidden, cleared, mu, chance, low, geometry, pair_bonus):
    """Expected grid sum minus the bonus for columns one matching card short (generic
    path, for grids where rows may also have been eliminated)."""
    rows = geometry[P_ROWS]
    cols = geometry[P_COLS]
    total = 0.0
    for s in range(values.shape[0]):
        if not cleared[s]:
            total += mu if hidden[s] else values[s]
    if geometry[P_COLUMN_ELIMINATION] == 0 or rows < 3:
        return total
    for c in range(cols):
        for r0 in range(rows):
            s0 = r0 * cols + c
            if hidden[s0] or cleared[s0]:
                continue
            same = 0
            blocked = False
            for r in range(rows):
                s = r * cols + c
                if cleared[s]:
                    blocked = True
                elif not hidden[s] and values[s] == values[s0]:
                    same += 1
            if blocked:
                break
            if same == rows - 1:
                if values[s0] > 0:
                    w = values[s0]
                    total -= pair_bonus * w * rows * min(1.0, 6.0 * chance[int(w) - low])
                break
    return total


@jit
def _outcome(values, hidden, cleared, slot, card, ctx, col_terms, mu, chance, low, geometry,
             pair_bonus, final_lap, opponent_best, fear, sv, sh, sc):
    """Value (lower is better) of the grid after ``card`` goes face up into ``slot``.

    ``ctx`` holds (total value, face-down count, face-up sum) of the current grid and
    ``col_terms`` (cols, 3) the same per column, so that without row elimination only the
    touched column is recomputed.
    """
    if geometry[P_ROW_ELIMINATION] == 0:
        c = slot % geometry[P_COLS]
        value, face_down, face_up = _column_terms(values, hidden, cleared, c, geometry, slot,
                                                  card, mu, chance, low, pair_bonus)
        total = ctx[0] - col_terms[c, 0] + value
        hidden_after = ctx[1] - col_terms[c, 1] + face_down
        mine = ctx[2] - col_terms[c, 2] + face_up
    else:
        sv[:] = values
        sh[:] = hidden
        sc[:] = cleared
        sv[slot] = card
        sh[slot] = False
        _eliminate_at(sv, sh, sc, slot, geometry)
        total = _grid_value(sv, sh, sc, mu, chance, low, geometry, pair_bonus)
        hidden_after = _count_hidden(sh, sc)
        mine = _known_sum(sv, sh, sc)
    if not final_lap and hidden_after == 0:
        total += _going_out_cost(mine, opponent_best, geometry, fear)
    return total


@jit
def _slot_outcomes(values, hidden, cleared, slot, ctx, col_terms, mu, card_values, chance,
                   low, geometry, pair_bonus, final_lap, opponent_best, fear,
                   row_out):
    """`_outcome` for every card value at one slot, without row elimination.

    Same numbers as `_outcome`, computed once per slot from the rest of the column
    instead of once per (slot, value): ``row_out[v]`` for card value index ``v``.
    """
    rows = geometry[P_ROWS]
    cols = geometry[P_COLS]
    c = slot % cols
    others_estimate, others_hidden, others_up = 0.0, 0, 0.0
    first_up = np.nan
    others_equal = True
    for r in range(rows):
        s = r * cols + c
        if s == slot:
            continue
        if hidden[s]:
            others_estimate += mu
            others_hidden += 1
        else:
            others_estimate += values[s]
            others_up += values[s]
            if np.isnan(first_up):
                first_up = values[s]
            elif values[s] != first_up:
                others_equal = False
    others_all_up_equal = others_hidden == 0 and others_equal
    column_elim = geometry[P_COLUMN_ELIMINATION] != 0 and rows >= 2
    for v in range(card_values.shape[0]):
        card = card_values[v]
        matches = 0
        for r in range(rows):
            s = r * cols + c
            if s != slot and not hidden[s] and values[s] == card:
                matches += 1
        if column_elim and others_all_up_equal and matches == rows - 1:
            value, face_down, face_up = 0.0, 0, 0.0
        else:
            value = others_estimate + card
            face_down = others_hidden
            face_up = others_up + card
            if column_elim and rows >= 3:
                pair = np.nan
                if matches == rows - 2:
                    pair = card
                elif others_all_up_equal:
                    pair = first_up
                if not np.isnan(pair) and pair > 0:
                    value -= pair_bonus * pair * rows * min(1.0, 6.0 * chance[int(pair) - low])
        total = ctx[0] - col_terms[c, 0] + value
        if not final_lap and ctx[1] - col_terms[c, 1] + face_down == 0:
            mine = ctx[2] - col_terms[c, 2] + face_up
            total += _going_out_cost(mine, opponent_best, geometry, fear)
        row_out[v] = total


@jit
def _outcome_table(values, hidden, cleared, ctx, col_terms, mu, card_values, chance, low,
                   geometry, pair_bonus, final_lap, opponent_best, fear,
                   sv, sh, sc, table):
    """``table[s, v]`` = `_outcome` of card value ``v`` going face up into slot ``s``
    (+inf for cleared slots): both a placement and a reveal that shows ``v``."""
    for s in range(values.shape[0]):
        if cleared[s]:
            table[s, :] = np.inf
        elif geometry[P_ROW_ELIMINATION] == 0:
            _slot_outcomes(values, hidden, cleared, s, ctx, col_terms, mu, card_values, chance,
                           low, geometry, pair_bonus, final_lap, opponent_best, fear, table[s])
        else:
            for v in range(card_values.shape[0]):
                table[s, v] = _outcome(values, hidden, cleared, s, card_values[v], ctx,
                                       col_terms, mu, chance, low, geometry, pair_bonus,
                                       final_lap, opponent_best, fear,
                                       sv, sh, sc)


@jit
def _best_place(table, v):
    """(lowest outcome value, slot) for placing the card of value index ``v``."""
    best, best_slot = np.inf, -1
    for s in range(table.shape[0]):
        if table[s, v] < best:
            best, best_slot = table[s, v], s
    return best, best_slot


@jit
def _best_reveal(table, hidden, cleared, probs):
    """(lowest expected outcome value, slot) over the face-down slots."""
    best, best_slot = np.inf, -1
    for s in range(table.shape[0]):
        if not hidden[s] or cleared[s]:
            continue
        expected = 0.0
        for v in range(probs.shape[0]):
            if probs[v] > 0.0:
                expected += probs[v] * table[s, v]
        if expected < best:
            best, best_slot = expected, s
    return best, best_slot


@jit
def _opponent_best(obs, n, offsets, geometry, slots, scale, mu, turn_gain):
    """Lowest expected final score among the opponents."""
    best = 1e18
    for k in range(geometry[P_PLAYERS] - 1):
        total = 0.0
        for s in range(slots):
            i = k * slots + s
            if obs[n, offsets[_OPP_CLEARED] + i] > 0.5:
                continue
            if obs[n, offsets[_OPP_HIDDEN] + i] > 0.5:
                total += mu
            else:
                total += _card(obs, n, offsets[_OPP_VALUES] + i, scale)
        best = min(best, total - turn_gain)
    return best


@jit
def _grid_context(values, hidden, cleared, mu, chance, low, geometry, pair_bonus, ctx,
                  col_terms):
    """Fill ``ctx`` and ``col_terms`` (see `_outcome`) for the current grid."""
    ctx[0] = _grid_value(values, hidden, cleared, mu, chance, low, geometry, pair_bonus)
    ctx[1] = _count_hidden(hidden, cleared)
    ctx[2] = _known_sum(values, hidden, cleared)
    if geometry[P_ROW_ELIMINATION] == 0:
        for c in range(geometry[P_COLS]):
            value, face_down, face_up = _column_terms(values, hidden, cleared, c, geometry, -1,
                                                      0.0, mu, chance, low, pair_bonus)
            col_terms[c, 0] = value
            col_terms[c, 1] = face_down
            col_terms[c, 2] = face_up


@jit
def ev_actions(obs, masks, offsets, geometry, slots, scale, card_values, card_counts,
               pair_bonus, opponent_turn_gain, patience, out):
    """Expected-value decisions for every row; see the module docstring."""
    values = np.empty(slots, np.float64)
    hidden = np.empty(slots, np.bool_)
    cleared = np.empty(slots, np.bool_)
    sv = np.empty(slots, np.float64)
    sh = np.empty(slots, np.bool_)
    sc = np.empty(slots, np.bool_)
    ctx = np.empty(3, np.float64)
    col_terms = np.zeros((geometry[P_COLS], 3), np.float64)
    num_values = card_values.shape[0]
    low = int(card_values[0])
    probs = np.empty(num_values, np.float64)
    chance = np.zeros(int(card_values[-1]) - low + 1, np.float64)
    value_index = np.zeros(int(card_values[-1]) - low + 1, np.int64)
    for v in range(num_values):
        value_index[int(card_values[v]) - low] = v
    table = np.empty((slots, num_values), np.float64)
    for n in range(obs.shape[0]):
        mask = masks[n]
        phase = _phase(obs, n, offsets)
        _own_grid(obs, n, offsets, slots, scale, values, hidden, cleared)
        unseen_total = 0.0
        for v in range(num_values):
            probs[v] = np.floor(obs[n, offsets[_UNSEEN] + v] * card_counts[v] + 0.5)
            unseen_total += probs[v]
        mu = 0.0
        for v in range(num_values):
            probs[v] = probs[v] / unseen_total if unseen_total > 0 else 1.0 / num_values
            chance[int(card_values[v]) - low] = probs[v]
            mu += probs[v] * card_values[v]
        final_lap = obs[n, offsets[_FINAL_LAP]] > 0.5
        opp = _opponent_best(obs, n, offsets, geometry, slots, scale, mu, opponent_turn_gain)
        # turns per player so far this round; past `patience` the fear of the penalty
        # fades over PATIENCE_FADE turns, so two cautious players cannot stall forever
        turns = obs[n, offsets[_ROUND_TURNS]] * ROUND_TURNS_SCALE
        fear = min(1.0, max(0.0, (patience + PATIENCE_FADE - turns) / PATIENCE_FADE))
        _grid_context(values, hidden, cleared, mu, chance, low, geometry, pair_bonus, ctx,
                      col_terms)
        _outcome_table(values, hidden, cleared, ctx, col_terms, mu, card_values, chance, low,
                       geometry, pair_bonus, final_lap, opp, fear, sv, sh, sc,
                       table)
        action = -1
        if phase == _INITIAL_REVEAL or phase == _REVEAL_AFTER_DISCARD:
            _, action = _best_reveal(table, hidden, cleared, probs)
        elif phase == _PLACE_DISCARD or phase == _PLACE_DRAWN:
            held = value_index[int(_card(obs, n, offsets[_HELD_CARD], scale)) - low]
            place_value, slot = _best_place(table, held)
            action = slots + 2 + slot
            if phase == _PLACE_DRAWN:
                reveal_value, _ = _best_reveal(table, hidden, cleared, probs)
                if reveal_value < place_value:
                    action = 2 * slots + 2
        elif phase == _CHOOSE_SOURCE:
            top = value_index[int(_card(obs, n, offsets[_DISCARD_TOP], scale)) - low]
            take_value, _ = _best_place(table, top)
            reveal_value, _ = _best_reveal(table, hidden, cleared, probs)
            draw_value = 0.0
            for v in range(num_values):
                if probs[v] > 0.0:
                    place_value, _ = _best_place(table, v)
                    draw_value += probs[v] * min(place_value, reveal_value)
            action = slots + 1 if take_value <= draw_value and mask[slots + 1] else slots
        if action < 0 or not mask[action]:
            action = _first_legal(mask, 0, mask.shape[0])
        out[n] = action


class EVAgent(_CompiledHeuristic):
    """The expected-value player with card counting described in the module docstring."""

    def __init__(
        self,
        rules: SkyjoRules | None = None,
        seed: int | None = None,
        pair_bonus: float = 0.4,
        opponent_turn_gain: float = 9.0,
        patience: float = 20.0,
        name: str = "ev",
    ):
        super().__init__(rules, name)
        self.card_values = self.rules.card_values.astype(np.float64)
        self.card_counts = self.rules.card_counts.astype(np.float64)
        self.pair_bonus = float(pair_bonus)
        self.opponent_turn_gain = float(opponent_turn_gain)
        self.patience = float(patience)

    def _decide(self, observations, action_masks, out):
        ev_actions(observations, action_masks, self.offsets, self.geometry,
                   self.rules.num_slots, self.scale, self.card_values, self.card_counts,
                   self.pair_bonus, self.opponent_turn_gain, self.patience, out)
