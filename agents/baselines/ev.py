"""The ``ev`` baseline: expected value with card counting.

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

Peeking (opt-in, for measuring how much luck caps a win rate): `EVAgent.act_with_peek`
and `ev_actions_peek` take the true values of the player's own face-down cards and use
them instead of ``mu`` (and drop them from the unseen counts); they stay face down for
legality, which only the mask decides. ``act`` and `ev_actions` never peek.

The decision picks only among the slots and sources the mask allows (a placement or a
reveal that is not allowed is never scored as a candidate), so each decision is legal by
construction (see `agents.baselines.common`).
"""

from __future__ import annotations

import numpy as np

from agents.baselines.common import (
    CHOOSE_SOURCE,
    DISCARD_TOP,
    FINAL_LAP,
    HELD_CARD,
    INITIAL_REVEAL,
    OPP_CLEARED,
    OPP_HIDDEN,
    OPP_VALUES,
    OWN_CLEARED,
    OWN_HIDDEN,
    OWN_VALUES,
    PHASE,
    PLACE_DISCARD,
    PLACE_DRAWN,
    REVEAL_AFTER_DISCARD,
    ROUND_TURNS,
    UNSEEN,
    CompiledHeuristic,
    card,
    check_inputs,
    choice_error,
    choose_source,
    first_illegal,
    own_grid,
    phase_of,
    place_action,
)
from skyjo_env.core import layout
from skyjo_env.core.jit import jit
from skyjo_env.core.kernels import penalised_score
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ROUND_TURNS_SCALE

#: turns per player over which ev's fear of the finisher penalty fades after `patience`
PATIENCE_FADE = 10.0

@jit
def _eliminate_at(values, hidden, cleared, slot, geometry):
    """Clear the lines through ``slot`` that are face up and equal (as the engine does)."""
    rows = geometry[layout.P_ROWS]
    cols = geometry[layout.P_COLS]
    col = slot % cols
    row = slot // cols
    column_done = geometry[layout.P_COLUMN_ELIMINATION] != 0 and rows >= 2
    if column_done:
        for r in range(rows):
            s = r * cols + col
            if hidden[s] or cleared[s] or values[s] != values[slot]:
                column_done = False
                break
    row_done = geometry[layout.P_ROW_ELIMINATION] != 0 and cols >= 2
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
    if geometry[layout.P_CONDITION_LT] != 0:
        at_risk = opponent_best < mine
    if not at_risk:
        return 0.0
    if geometry[layout.P_ONLY_IF_POSITIVE] != 0 and mine <= 0:
        return 0.0
    return fear * (penalised_score(mine, geometry) - mine)


@jit
def _column_terms(values, hidden, cleared, c, geometry, slot, card, down_value, chance, low,
                  pair_bonus):
    """One column's share of `_grid_value`, with ``slot`` (-1: none) holding ``card``
    face up and the column eliminated if that completes it.

    Valid without row elimination, where a column is either whole or fully cleared.
    ``down_value`` (float64 (S,)) is what each face-down slot is counted as.
    Returns ``(value, face-down count, face-up sum)``.
    """
    rows = geometry[layout.P_ROWS]
    cols = geometry[layout.P_COLS]
    if cleared[c]:
        return 0.0, 0, 0.0
    first = card if slot == c else values[c]
    complete = geometry[layout.P_COLUMN_ELIMINATION] != 0 and rows >= 2
    estimate, face_down, face_up = 0.0, 0, 0.0
    for r in range(rows):
        s = r * cols + c
        is_hidden = hidden[s] and s != slot
        value = card if s == slot else values[s]
        if is_hidden or value != first:
            complete = False
        if is_hidden:
            estimate += down_value[s]
            face_down += 1
        else:
            estimate += value
            face_up += value
    if complete:
        return 0.0, 0, 0.0
    if geometry[layout.P_COLUMN_ELIMINATION] != 0 and rows >= 3:
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
    """`_grid_value_of` with every face-down card counted as ``mu``."""
    down_value = np.full(values.shape[0], mu)
    return _grid_value_of(values, hidden, cleared, down_value, chance, low, geometry,
                          pair_bonus)


@jit
def _grid_value_of(values, hidden, cleared, down_value, chance, low, geometry, pair_bonus):
    """Expected grid sum minus the bonus for columns one matching card short (generic
    path, for grids where rows may also have been eliminated); face-down slot ``s``
    counts as ``down_value[s]``."""
    rows = geometry[layout.P_ROWS]
    cols = geometry[layout.P_COLS]
    total = 0.0
    for s in range(values.shape[0]):
        if not cleared[s]:
            total += down_value[s] if hidden[s] else values[s]
    if geometry[layout.P_COLUMN_ELIMINATION] == 0 or rows < 3:
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
def _outcome(values, hidden, cleared, slot, card, ctx, col_terms, down_value, chance, low,
             geometry, pair_bonus, final_lap, opponent_best, fear, sv, sh, sc):
    """Value (lower is better) of the grid after ``card`` goes face up into ``slot``.

    ``ctx`` holds (total value, face-down count, face-up sum) of the current grid and
    ``col_terms`` (cols, 3) the same per column, so that without row elimination only the
    touched column is recomputed.
    """
    if geometry[layout.P_ROW_ELIMINATION] == 0:
        c = slot % geometry[layout.P_COLS]
        value, face_down, face_up = _column_terms(values, hidden, cleared, c, geometry, slot,
                                                  card, down_value, chance, low, pair_bonus)
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
        total = _grid_value_of(sv, sh, sc, down_value, chance, low, geometry, pair_bonus)
        hidden_after = _count_hidden(sh, sc)
        mine = _known_sum(sv, sh, sc)
    if not final_lap and hidden_after == 0:
        total += _going_out_cost(mine, opponent_best, geometry, fear)
    return total


@jit
def _slot_outcomes(values, hidden, cleared, slot, ctx, col_terms, down_value, card_values,
                   chance, low, geometry, pair_bonus, final_lap, opponent_best, fear,
                   row_out):
    """`_outcome` for every card value at one slot, without row elimination.

    Same numbers as `_outcome`, computed once per slot from the rest of the column
    instead of once per (slot, value): ``row_out[v]`` for card value index ``v``.
    """
    rows = geometry[layout.P_ROWS]
    cols = geometry[layout.P_COLS]
    c = slot % cols
    others_estimate, others_hidden, others_up = 0.0, 0, 0.0
    first_up = np.nan
    others_equal = True
    for r in range(rows):
        s = r * cols + c
        if s == slot:
            continue
        if hidden[s]:
            others_estimate += down_value[s]
            others_hidden += 1
        else:
            others_estimate += values[s]
            others_up += values[s]
            if np.isnan(first_up):
                first_up = values[s]
            elif values[s] != first_up:
                others_equal = False
    others_all_up_equal = others_hidden == 0 and others_equal
    column_elim = geometry[layout.P_COLUMN_ELIMINATION] != 0 and rows >= 2
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
    """`_outcome_table_of` with every face-down card counted as ``mu``."""
    _outcome_table_of(values, hidden, cleared, ctx, col_terms, np.full(values.shape[0], mu),
                      card_values, chance, low, geometry, pair_bonus, final_lap,
                      opponent_best, fear, sv, sh, sc, table)


@jit
def _outcome_table_of(values, hidden, cleared, ctx, col_terms, down_value, card_values, chance,
                      low, geometry, pair_bonus, final_lap, opponent_best, fear,
                      sv, sh, sc, table):
    """``table[s, v]`` = `_outcome` of card value ``v`` going face up into slot ``s``
    (+inf for cleared slots): both a placement and a reveal that shows ``v``."""
    for s in range(values.shape[0]):
        if cleared[s]:
            table[s, :] = np.inf
        elif geometry[layout.P_ROW_ELIMINATION] == 0:
            _slot_outcomes(values, hidden, cleared, s, ctx, col_terms, down_value, card_values,
                           chance, low, geometry, pair_bonus, final_lap, opponent_best, fear,
                           table[s])
        else:
            for v in range(card_values.shape[0]):
                table[s, v] = _outcome(values, hidden, cleared, s, card_values[v], ctx,
                                       col_terms, down_value, chance, low, geometry,
                                       pair_bonus, final_lap, opponent_best, fear,
                                       sv, sh, sc)


@jit
def _best_place(table, v, allowed):
    """(lowest outcome value, slot) for placing the card of value index ``v`` on a slot
    with ``allowed[s]`` (bool (S,)); (+inf, -1) if there is none."""
    best, best_slot = np.inf, -1
    for s in range(table.shape[0]):
        if allowed[s] and table[s, v] < best:
            best, best_slot = table[s, v], s
    return best, best_slot


@jit
def _best_reveal(table, allowed, probs, known):
    """(lowest expected outcome value, slot) over the slots with ``allowed[s]`` (bool (S,),
    face-down slots); (+inf, -1) if there is none. A slot with ``known[s]`` >= 0 (int64
    (S,), a value index; -1: unknown) reveals that value for sure."""
    best, best_slot = np.inf, -1
    for s in range(table.shape[0]):
        if not allowed[s]:
            continue
        if known[s] >= 0:
            if table[s, known[s]] < best:
                best, best_slot = table[s, known[s]], s
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
    for k in range(geometry[layout.P_PLAYERS] - 1):
        total = 0.0
        for s in range(slots):
            i = k * slots + s
            if obs[n, offsets[OPP_CLEARED] + i] > 0.5:
                continue
            if obs[n, offsets[OPP_HIDDEN] + i] > 0.5:
                total += mu
            else:
                total += card(obs, n, offsets[OPP_VALUES] + i, scale)
        best = min(best, total - turn_gain)
    return best


@jit
def _grid_context(values, hidden, cleared, mu, chance, low, geometry, pair_bonus, ctx,
                  col_terms):
    """`_grid_context_of` with every face-down card counted as ``mu``."""
    _grid_context_of(values, hidden, cleared, np.full(values.shape[0], mu), chance, low,
                     geometry, pair_bonus, ctx, col_terms)


@jit
def _grid_context_of(values, hidden, cleared, down_value, chance, low, geometry, pair_bonus,
                     ctx, col_terms):
    """Fill ``ctx`` and ``col_terms`` (see `_outcome`) for the current grid."""
    ctx[0] = _grid_value_of(values, hidden, cleared, down_value, chance, low, geometry,
                            pair_bonus)
    ctx[1] = _count_hidden(hidden, cleared)
    ctx[2] = _known_sum(values, hidden, cleared)
    if geometry[layout.P_ROW_ELIMINATION] == 0:
        for c in range(geometry[layout.P_COLS]):
            value, face_down, face_up = _column_terms(values, hidden, cleared, c, geometry, -1,
                                                      0.0, down_value, chance, low, pair_bonus)
            col_terms[c, 0] = value
            col_terms[c, 1] = face_down
            col_terms[c, 2] = face_up


@jit
def ev_actions(obs, masks, offsets, geometry, slots, scale, card_values, card_counts,
               pair_bonus, opponent_turn_gain, patience, out):
    """Expected-value decisions for every row; see the module docstring.

    Args:
        obs: float32 (N, O) observations.
        masks: bool (N, 2S+3) legal-action masks.
        offsets: int64 piece starts (`agents.baselines.common.layout_arrays`).
        geometry: int64 rules parameters (`skyjo_env.core.engine.rules_params`).
        slots: S, slots per grid.
        scale: The observation's value scale.
        card_values, card_counts: float64 (V,) the deck's distinct values and their counts.
        pair_bonus, opponent_turn_gain, patience: The rule's weights.
        out: int64 (N,), filled with legal action ids (-1: no legal action of the phase
            the observation shows).

    Returns:
        `first_illegal` of ``out``: -1 when every row got a legal action.
    """
    return _ev_decisions(obs, masks, offsets, geometry, slots, scale, card_values, card_counts,
                         pair_bonus, opponent_turn_gain, patience,
                         np.empty((0, slots), np.float64), False, out)


@jit
def ev_actions_peek(obs, masks, offsets, geometry, slots, scale, card_values, card_counts,
                    pair_bonus, opponent_turn_gain, patience, own_true_values, out):
    """`ev_actions` by a player who knows the values of its own face-down cards.

    Each own face-down slot ``s`` of row ``n`` counts as ``own_true_values[n, s]`` instead
    of the mean unseen card, revealing it shows that value for sure, and those cards are
    taken out of the unseen counts (so draws and opponents' cards are valued over the
    cards the player really has not seen). Legality still comes from ``masks`` only.

    Args:
        own_true_values: float64 (N, S), the true value of every own slot (only the
            face-down, not cleared ones are read); each must be one of ``card_values``.
        (the others as in `ev_actions`)

    Returns:
        `first_illegal` of ``out``: -1 when every row got a legal action.
    """
    return _ev_decisions(obs, masks, offsets, geometry, slots, scale, card_values, card_counts,
                         pair_bonus, opponent_turn_gain, patience, own_true_values, True, out)


@jit
def _ev_decisions(obs, masks, offsets, geometry, slots, scale, card_values, card_counts,
                  pair_bonus, opponent_turn_gain, patience, own_true_values, peek, out):
    """`ev_actions` (``peek`` False; ``own_true_values`` unread) or `ev_actions_peek`."""
    values = np.empty(slots, np.float64)
    hidden = np.empty(slots, np.bool_)
    cleared = np.empty(slots, np.bool_)
    sv = np.empty(slots, np.float64)
    sh = np.empty(slots, np.bool_)
    sc = np.empty(slots, np.bool_)
    ctx = np.empty(3, np.float64)
    col_terms = np.zeros((geometry[layout.P_COLS], 3), np.float64)
    num_values = card_values.shape[0]
    low = int(card_values[0])
    probs = np.empty(num_values, np.float64)
    chance = np.zeros(int(card_values[-1]) - low + 1, np.float64)
    value_index = np.zeros(int(card_values[-1]) - low + 1, np.int64)
    for v in range(num_values):
        value_index[int(card_values[v]) - low] = v
    table = np.empty((slots, num_values), np.float64)
    standing = np.empty(slots, np.bool_)
    face_down = np.empty(slots, np.bool_)
    # what each face-down slot counts as, and its known value index (-1: unknown)
    down_value = np.empty(slots, np.float64)
    known = np.full(slots, -1, np.int64)
    discard = 2 * slots + 2
    for n in range(obs.shape[0]):
        mask = masks[n]
        phase = phase_of(obs, n, offsets)
        own_grid(obs, n, offsets, slots, scale, values, hidden, cleared)
        for v in range(num_values):
            probs[v] = np.floor(obs[n, offsets[UNSEEN] + v] * card_counts[v] + 0.5)
        if peek:
            # a card the player knows is no longer unseen to it
            for s in range(slots):
                known[s] = -1
                if hidden[s] and not cleared[s]:
                    known[s] = value_index[int(own_true_values[n, s]) - low]
                    probs[known[s]] = max(0.0, probs[known[s]] - 1.0)
        unseen_total = 0.0
        for v in range(num_values):
            unseen_total += probs[v]
        mu = 0.0
        for v in range(num_values):
            probs[v] = probs[v] / unseen_total if unseen_total > 0 else 1.0 / num_values
            chance[int(card_values[v]) - low] = probs[v]
            mu += probs[v] * card_values[v]
        final_lap = obs[n, offsets[FINAL_LAP]] > 0.5
        opp = _opponent_best(obs, n, offsets, geometry, slots, scale, mu, opponent_turn_gain)
        # turns per player so far this round; past `patience` the fear of the penalty
        # fades over PATIENCE_FADE turns, so two cautious players cannot stall forever
        turns = obs[n, offsets[ROUND_TURNS]] * ROUND_TURNS_SCALE
        fear = min(1.0, max(0.0, (patience + PATIENCE_FADE - turns) / PATIENCE_FADE))
        for s in range(slots):
            down_value[s] = card_values[known[s]] if known[s] >= 0 else mu
        _grid_context_of(values, hidden, cleared, down_value, chance, low, geometry, pair_bonus,
                         ctx, col_terms)
        _outcome_table_of(values, hidden, cleared, ctx, col_terms, down_value, card_values,
                          chance, low, geometry, pair_bonus, final_lap, opp, fear, sv, sh, sc,
                          table)
        # what the next decision's mask will allow, for valuing a source or a discard
        for s in range(slots):
            standing[s] = not cleared[s]
            face_down[s] = hidden[s] and not cleared[s]
        action = -1
        if phase == INITIAL_REVEAL or phase == REVEAL_AFTER_DISCARD:
            _, slot = _best_reveal(table, mask[:slots], probs, known)  # REVEAL id = slot
            action = slot
        elif phase == PLACE_DISCARD or phase == PLACE_DRAWN:
            held = value_index[int(card(obs, n, offsets[HELD_CARD], scale)) - low]
            place_value, slot = _best_place(table, held, mask[slots + 2:2 * slots + 2])
            action = place_action(slots, slot)
            if phase == PLACE_DRAWN and mask[discard]:
                reveal_value, _ = _best_reveal(table, face_down, probs, known)
                if reveal_value < place_value:
                    action = discard
        elif phase == CHOOSE_SOURCE:
            top = value_index[int(card(obs, n, offsets[DISCARD_TOP], scale)) - low]
            take_value, _ = _best_place(table, top, standing)
            reveal_value, _ = _best_reveal(table, face_down, probs, known)
            draw_value = 0.0
            for v in range(num_values):
                if probs[v] > 0.0:
                    place_value, _ = _best_place(table, v, standing)
                    draw_value += probs[v] * min(place_value, reveal_value)
            action = choose_source(mask, slots, take_value <= draw_value)
        out[n] = action
    return first_illegal(masks, out)


class PeekValuesError(ValueError):
    """Own-grid values handed to `EVAgent.act_with_peek` that do not fit the observation."""


class EVAgent(CompiledHeuristic):
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
        return ev_actions(observations, action_masks, self.offsets, self.geometry,
                          self.rules.num_slots, self.scale, self.card_values,
                          self.card_counts, self.pair_bonus, self.opponent_turn_gain,
                          self.patience, out)

    def act_with_peek(self, observations: np.ndarray, action_masks: np.ndarray,
                      own_true_values: np.ndarray) -> np.ndarray:
        """Actions of the same rule when it may see its own face-down cards (a ceiling, not
        a fair player: see the module docstring).

        Args:
            observations: float32 (N, O), as for ``act``.
            action_masks: bool (N, A), as for ``act``.
            own_true_values: int or float (N, S), the acting seat's true grid values (e.g.
                ``state.grid[b, seat]``); read at its face-down slots, checked against the
                observation at its face-up ones.

        Returns:
            int64 (N,) legal actions.

        Raises:
            PeekValuesError: ``own_true_values`` of the wrong shape, with a value that is
                not a card of the deck, or disagreeing with a face-up card of the
                observation (the grid of another seat or state).
            ValueError, HeuristicChoiceError: As for ``act``.
        """
        observations, action_masks = check_inputs(observations, action_masks, self.size)
        own = self._check_own_values(observations, own_true_values)
        out = np.empty(observations.shape[0], np.int64)
        bad = ev_actions_peek(observations, action_masks, self.offsets, self.geometry,
                              self.rules.num_slots, self.scale, self.card_values,
                              self.card_counts, self.pair_bonus, self.opponent_turn_gain,
                              self.patience, own, out)
        if bad >= 0:
            raise choice_error(self.name, self.rules, int(self.offsets[PHASE]), bad,
                               observations[bad], action_masks[bad], int(out[bad]))
        return out

    def _check_own_values(self, observations: np.ndarray, own_true_values) -> np.ndarray:
        """``own_true_values`` as contiguous float64 (N, S) after the checks of
        `act_with_peek`."""
        slots = self.rules.num_slots
        own = np.asarray(own_true_values, dtype=np.float64)
        if own.ndim == 1:
            own = own.reshape(1, -1)
        if own.shape != (observations.shape[0], slots):
            raise PeekValuesError(
                f"own_true_values has shape {np.shape(own_true_values)}; expected "
                f"({observations.shape[0]}, {slots}), one grid per observation"
            )
        standing = observations[:, self.offsets[OWN_CLEARED]:][:, :slots] < 0.5
        bad = standing & ~np.isin(own, self.card_values)
        if bad.any():
            n, s = np.argwhere(bad)[0]
            raise PeekValuesError(
                f"own_true_values[{n}, {s}] = {own[n, s]:g} is not a card of the deck "
                f"(values {self.rules.card_values.tolist()})"
            )
        face_up = standing & (observations[:, self.offsets[OWN_HIDDEN]:][:, :slots] < 0.5)
        seen = np.rint(observations[:, self.offsets[OWN_VALUES]:][:, :slots] * self.scale)
        bad = face_up & (seen != own)
        if bad.any():
            n, s = np.argwhere(bad)[0]
            raise PeekValuesError(
                f"own_true_values[{n}, {s}] = {own[n, s]:g} but the observation shows "
                f"{seen[n, s]:g} face up there: pass the acting seat's grid of the same state"
            )
        return np.ascontiguousarray(own)
