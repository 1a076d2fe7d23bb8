"""Compiled transition functions of the rules engine (numba), looped over a batch of games.

These are the only implementation of the rules. Each kernel takes the state arrays of
`skyjo_env.core.engine.BatchState` in this order::

    grid          int16  (B, P, S)  card value in each slot (valid unless CLEARED)
    slot_state    int8   (B, P, S)  HIDDEN / FACE_UP / CLEARED
    draw_pile     int16  (B, D)     draw pile, top at index game[b, DRAW_SIZE] - 1
    discard_pile  int16  (B, D)     discard pile, top at index game[b, DISCARD_SIZE] - 1
    game          int32  (B, NUM_GAME_FIELDS)
    seat          int32  (B, P, NUM_SEAT_FIELDS)
    rng           uint64 (B,)       per-game splitmix64 state: the only source of chance
    final_grid    int16  (B, P, S)  grids at the end of the last scored round
    final_state   int8   (B, P, S)
    params        int64  (NUM_PARAMS,)
    deck          int16  (D,)

Run with ``NUMBA_DISABLE_JIT=1`` to execute the very same code as plain Python.
"""

from __future__ import annotations

import numpy as np

from skyjo_env.core import layout
from skyjo_env.core.actions import Phase
from skyjo_env.core.jit import jit

INITIAL_REVEAL = int(Phase.INITIAL_REVEAL)
CHOOSE_SOURCE = int(Phase.CHOOSE_SOURCE)
PLACE_DRAWN = int(Phase.PLACE_DRAWN)
PLACE_DISCARD = int(Phase.PLACE_DISCARD)
REVEAL_AFTER_DISCARD = int(Phase.REVEAL_AFTER_DISCARD)
GAME_OVER = int(Phase.GAME_OVER)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)


# ---------------------------------------------------------------- chance


@jit
def next_random(rng, b):
    """Next 64-bit output of game ``b``'s splitmix64 stream (uint64)."""
    z = rng[b] + _GOLDEN
    rng[b] = z
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@jit
def random_below(rng, b, n):
    """A uniform int in ``0 .. n-1`` from game ``b``'s stream (bias below 1e-16)."""
    return np.int64(next_random(rng, b) % np.uint64(n))


@jit
def shuffle_prefix(pile, b, n, rng):
    """Fisher-Yates shuffle of ``pile[b, :n]`` in place with game ``b``'s stream."""
    for i in range(n - 1, 0, -1):
        j = random_below(rng, b, i + 1)
        tmp = pile[b, i]
        pile[b, i] = pile[b, j]
        pile[b, j] = tmp


# ---------------------------------------------------------------- legality


@jit
def legal_mask_into(b, slot_state, game, params, out):
    """Write game ``b``'s legal-action mask into ``out`` (bool, shape (2S+3,)).

    The single source of legality: every interface derives its mask and its illegal-action
    errors from this function.
    """
    num_slots = params[layout.P_SLOTS]
    out[:] = False
    phase = game[b, layout.PHASE]
    seat = game[b, layout.CURRENT]
    if phase == INITIAL_REVEAL or phase == REVEAL_AFTER_DISCARD:
        for s in range(num_slots):
            out[s] = slot_state[b, seat, s] == layout.HIDDEN
    elif phase == CHOOSE_SOURCE:
        # The config check (deck >= players * slots + 2) keeps two cards in the piles
        # whenever no card is held, so a draw always succeeds after a reshuffle.
        out[num_slots] = True
        out[num_slots + 1] = game[b, layout.DISCARD_SIZE] > 0
    elif phase == PLACE_DRAWN or phase == PLACE_DISCARD:
        for s in range(num_slots):
            out[num_slots + 2 + s] = slot_state[b, seat, s] != layout.CLEARED
        out[2 * num_slots + 2] = phase == PLACE_DRAWN


@jit
def legal_masks(slot_state, game, params, out):
    """Legal-action masks of a whole batch into ``out`` (bool, shape (B, 2S+3))."""
    for b in range(game.shape[0]):
        legal_mask_into(b, slot_state, game, params, out[b])


# ---------------------------------------------------------------- grid helpers


@jit
def push_discard(discard_pile, game, b, value):
    """Put a card face up on top of game ``b``'s discard pile."""
    discard_pile[b, game[b, layout.DISCARD_SIZE]] = value
    game[b, layout.DISCARD_SIZE] += 1


@jit
def line_matches(grid, slot_state, b, p, first, step, length):
    """True if the ``length`` slots ``first, first+step, ...`` are face up and equal."""
    value = grid[b, p, first]
    for k in range(length):
        s = first + k * step
        if slot_state[b, p, s] != layout.FACE_UP or grid[b, p, s] != value:
            return False
    return True


@jit
def eliminate_lines(grid, slot_state, discard_pile, game, seat, params, b, p):
    """Remove every matching column (and row, if enabled) of seat ``p``'s grid.

    Matches are found on the grid before anything is removed, so crossing lines go
    together (a shared card once). Removed cards go onto the discard pile columns first
    (left to right, each top to bottom), then rows (top to bottom, each left to right),
    so the discard top ends up being the eliminated value. Returns the number of lines.
    """
    rows = params[layout.P_ROWS]
    cols = params[layout.P_COLS]
    column_hits = np.uint64(0)
    row_hits = np.uint64(0)
    lines = 0
    if params[layout.P_COLUMN_ELIMINATION] != 0 and rows >= 2:
        for c in range(cols):
            if line_matches(grid, slot_state, b, p, c, cols, rows):
                column_hits |= np.uint64(1) << np.uint64(c)
                lines += 1
    if params[layout.P_ROW_ELIMINATION] != 0 and cols >= 2:
        for r in range(rows):
            if line_matches(grid, slot_state, b, p, r * cols, 1, cols):
                row_hits |= np.uint64(1) << np.uint64(r)
                lines += 1
    if lines == 0:
        return 0
    for c in range(cols):
        if (column_hits >> np.uint64(c)) & np.uint64(1):
            for r in range(rows):
                s = r * cols + c
                push_discard(discard_pile, game, b, grid[b, p, s])
                slot_state[b, p, s] = layout.CLEARED
    for r in range(rows):
        if (row_hits >> np.uint64(r)) & np.uint64(1):
            for c in range(cols):
                s = r * cols + c
                if slot_state[b, p, s] != layout.CLEARED:
                    push_discard(discard_pile, game, b, grid[b, p, s])
                    slot_state[b, p, s] = layout.CLEARED
    seat[b, p, layout.LINES_ELIMINATED] += lines
    return lines


@jit
def count_hidden(slot_state, b, p):
    """Number of face-down slots in seat ``p``'s grid."""
    n = 0
    for s in range(slot_state.shape[2]):
        if slot_state[b, p, s] == layout.HIDDEN:
            n += 1
    return n


@jit
def grid_score(grid, slot_state, b, p):
    """Sum of the cards still in seat ``p``'s grid (cleared slots count 0)."""
    total = 0
    for s in range(grid.shape[2]):
        if slot_state[b, p, s] != layout.CLEARED:
            total += grid[b, p, s]
    return total


# ---------------------------------------------------------------- scoring


@jit
def penalised_score(score, params):
    """A penalised finisher's score under the rules' penalty mode (RULES.md §11)."""
    mode = params[layout.P_PENALTY_MODE]
    m = params[layout.P_MULTIPLIER]
    f = params[layout.P_FLAT]
    if mode == layout.PENALTY_MULTIPLIER:
        return score * m
    if mode == layout.PENALTY_FLAT:
        return score + f
    if mode == layout.PENALTY_FLAT_THEN_MULTIPLIER:
        return (score + f) * m
    if mode == layout.PENALTY_MULTIPLIER_THEN_FLAT:
        return score * m + f
    return score


@jit
def apply_finisher_penalty(raw, finisher, params):
    """Round scores (int64, shape (P,)) from raw scores, per RULES.md §11.

    Returns ``(scores, penalised)``; only the finisher's score can change.
    """
    scores = raw.copy()
    if finisher < 0:
        return scores, False
    s = raw[finisher]
    someone_as_good = False
    for p in range(raw.shape[0]):
        if p == finisher:
            continue
        if params[layout.P_CONDITION_LT] != 0:
            if raw[p] < s:
                someone_as_good = True
        elif raw[p] <= s:
            someone_as_good = True
    if not someone_as_good:
        return scores, False
    if params[layout.P_ONLY_IF_POSITIVE] != 0 and s <= 0:
        return scores, False
    scores[finisher] = penalised_score(s, params)
    return scores, scores[finisher] != s


# ---------------------------------------------------------------- round setup


@jit
def choose_starter_by_reveals(grid, slot_state, rng, params, b):
    """Round-1 rule: highest face-up sum, then highest single face-up card, then a
    seeded random choice among the still tied (all tied when nothing is face up)."""
    num_players = params[layout.P_PLAYERS]
    num_slots = params[layout.P_SLOTS]
    sums = np.zeros(num_players, np.int64)
    highs = np.full(num_players, -(1 << 40), np.int64)
    for p in range(num_players):
        for s in range(num_slots):
            if slot_state[b, p, s] == layout.FACE_UP:
                sums[p] += grid[b, p, s]
                if grid[b, p, s] > highs[p]:
                    highs[p] = grid[b, p, s]
    best_sum = sums.max()
    best_high = -(1 << 41)
    for p in range(num_players):
        if sums[p] == best_sum and highs[p] > best_high:
            best_high = highs[p]
    tied = 0
    for p in range(num_players):
        if sums[p] == best_sum and highs[p] == best_high:
            tied += 1
    pick = random_below(rng, b, tied) if tied > 1 else 0
    for p in range(num_players):
        if sums[p] == best_sum and highs[p] == best_high:
            if pick == 0:
                return p
            pick -= 1
    return 0


@jit
def finish_setup(grid, slot_state, discard_pile, game, seat, rng, params, b):
    """End a round's setup once every seat has made all its initial reveals.

    RULES.md §3.5 and §7 check eliminations "after setup", not after each reveal: only
    now are the lines of every grid checked, seat 0 first (so the discard pile takes
    seat 0's eliminated cards, then seat 1's, ...), whichever reveal mode dealt the
    face-up cards. Then §3.6 picks the starter from the face-up cards that remain:
    setup (§3.5) ends before the starter is chosen (§3.6), and an eliminated card is no
    longer face up, so eliminated cards do not count towards the starter's sum.
    """
    for p in range(params[layout.P_PLAYERS]):
        eliminate_lines(grid, slot_state, discard_pile, game, seat, params, b, p)
    begin_turns(grid, slot_state, game, rng, params, b)


@jit
def begin_turns(grid, slot_state, game, rng, params, b):
    """After the setup: pick the starter and hand them the first turn."""
    previous = game[b, layout.PREV_FINISHER]
    if game[b, layout.ROUND] > 0 and params[layout.P_NEXT_STARTER_PREVIOUS] != 0 and previous >= 0:
        starter = previous
    else:
        starter = choose_starter_by_reveals(grid, slot_state, rng, params, b)
    game[b, layout.STARTER] = starter
    game[b, layout.CURRENT] = starter
    game[b, layout.PHASE] = CHOOSE_SOURCE


@jit
def deal_round(grid, slot_state, draw_pile, discard_pile, game, seat, rng, params, deck, b,
               stacked):
    """Shuffle the whole deck, deal, flip the discard, and start the initial reveals.

    ``stacked`` (int16, shape (D,) or (0,)): when non-empty, the deck in dealing order
    (first element dealt first) is used instead of a shuffle, for known-answer tests.
    """
    num_players = params[layout.P_PLAYERS]
    num_slots = params[layout.P_SLOTS]
    size = params[layout.P_DECK_SIZE]
    if stacked.shape[0] > 0:
        # dealing pops from the end, so store the stacked order reversed
        for i in range(size):
            draw_pile[b, i] = stacked[size - 1 - i]
    else:
        for i in range(size):
            draw_pile[b, i] = deck[i]
        shuffle_prefix(draw_pile, b, size, rng)
    for p in range(num_players):
        for s in range(num_slots):
            size -= 1
            grid[b, p, s] = draw_pile[b, size]
            slot_state[b, p, s] = layout.HIDDEN
    size -= 1
    discard_pile[b, 0] = draw_pile[b, size]
    game[b, layout.DISCARD_SIZE] = 1
    game[b, layout.DRAW_SIZE] = size
    game[b, layout.FINISHER] = -1
    game[b, layout.TURN] = 0
    game[b, layout.REVEALS_DONE] = 0
    game[b, layout.HELD] = 0
    reveals = params[layout.P_INITIAL_REVEALS]
    if reveals > 0 and params[layout.P_REVEAL_RANDOM] == 0:
        game[b, layout.PHASE] = INITIAL_REVEAL
        game[b, layout.CURRENT] = 0
        return
    if reveals > 0:
        for p in range(num_players):
            # partial Fisher-Yates over a list of slot indices picks distinct slots
            order = np.arange(num_slots)
            for k in range(reveals):
                j = k + random_below(rng, b, num_slots - k)
                tmp = order[k]
                order[k] = order[j]
                order[j] = tmp
                slot_state[b, p, order[k]] = layout.FACE_UP
    finish_setup(grid, slot_state, discard_pile, game, seat, rng, params, b)


@jit
def start_game(grid, slot_state, draw_pile, discard_pile, game, seat, rng, final_grid,
               final_state, params, deck, b, seed, stacked):
    """Reset game ``b`` to the start of a new game whose chance comes from ``seed``."""
    rng[b] = seed
    game[b, :] = 0
    game[b, layout.PREV_FINISHER] = -1
    seat[b, :, :] = 0
    final_grid[b, :, :] = 0
    final_state[b, :, :] = layout.CLEARED
    deal_round(grid, slot_state, draw_pile, discard_pile, game, seat, rng, params, deck, b,
               stacked)


# ---------------------------------------------------------------- round end


@jit
def end_round(grid, slot_state, draw_pile, discard_pile, game, seat, rng, final_grid,
              final_state, params, deck, b):
    """Final reveal, eliminations, scores, totals; then the next round or the game end.

    Returns the event bits (round ended, and game ended if it did).
    """
    num_players = params[layout.P_PLAYERS]
    for p in range(num_players):
        for s in range(params[layout.P_SLOTS]):
            if slot_state[b, p, s] == layout.HIDDEN:
                slot_state[b, p, s] = layout.FACE_UP
        if params[layout.P_FINAL_REVEAL_ELIMINATION] != 0:
            eliminate_lines(grid, slot_state, discard_pile, game, seat, params, b, p)
    raw = np.zeros(num_players, np.int64)
    for p in range(num_players):
        raw[p] = grid_score(grid, slot_state, b, p)
    finisher = game[b, layout.FINISHER]
    scores, penalised = apply_finisher_penalty(raw, finisher, params)
    game_over = False
    for p in range(num_players):
        seat[b, p, layout.RAW_SCORE] = raw[p]
        seat[b, p, layout.ROUND_SCORE] = scores[p]
        seat[b, p, layout.TOTAL] += scores[p]
        if seat[b, p, layout.TOTAL] >= params[layout.P_TARGET]:
            game_over = True
    if finisher >= 0:
        seat[b, finisher, layout.ROUNDS_FINISHED] += 1
        if penalised:
            seat[b, finisher, layout.TIMES_PENALISED] += 1
    final_grid[b] = grid[b]
    final_state[b] = slot_state[b]
    game[b, layout.ROUND] += 1
    game[b, layout.PREV_FINISHER] = finisher
    if params[layout.P_MAX_ROUNDS] > 0 and game[b, layout.ROUND] >= params[layout.P_MAX_ROUNDS]:
        game_over = True
    if game_over:
        game[b, layout.PHASE] = GAME_OVER
        return layout.EVENT_ROUND_ENDED | layout.EVENT_GAME_ENDED
    deal_round(grid, slot_state, draw_pile, discard_pile, game, seat, rng, params, deck, b,
               deck[:0])
    return layout.EVENT_ROUND_ENDED


@jit
def end_turn(grid, slot_state, draw_pile, discard_pile, game, seat, rng, final_grid,
             final_state, params, deck, b):
    """Finishing check, then pass the turn (or end the round / truncate). Returns events."""
    actor = game[b, layout.CURRENT]
    if game[b, layout.FINISHER] < 0 and count_hidden(slot_state, b, actor) == 0:
        game[b, layout.FINISHER] = actor
    game[b, layout.TURN] += 1
    game[b, layout.PHASE] = CHOOSE_SOURCE
    following = (actor + 1) % params[layout.P_PLAYERS]
    if game[b, layout.FINISHER] >= 0 and following == game[b, layout.FINISHER]:
        return end_round(grid, slot_state, draw_pile, discard_pile, game, seat, rng,
                         final_grid, final_state, params, deck, b)
    if params[layout.P_MAX_TURNS] > 0 and game[b, layout.TURN] >= params[layout.P_MAX_TURNS]:
        game[b, layout.PHASE] = GAME_OVER
        game[b, layout.TRUNCATED] = 1
        return layout.EVENT_GAME_ENDED | layout.EVENT_TRUNCATED
    game[b, layout.CURRENT] = following
    return 0


# ---------------------------------------------------------------- actions


@jit
def refill_draw_pile(draw_pile, discard_pile, game, rng, params, b):
    """The draw pile is empty: turn the discard pile into a new one (RULES.md §6)."""
    keep_top = params[layout.P_RESHUFFLE_ALL] == 0
    n = game[b, layout.DISCARD_SIZE] - 1 if keep_top else game[b, layout.DISCARD_SIZE]
    for i in range(n):
        draw_pile[b, i] = discard_pile[b, i]
    shuffle_prefix(draw_pile, b, n, rng)
    if keep_top:
        discard_pile[b, 0] = discard_pile[b, n]
        game[b, layout.DISCARD_SIZE] = 1
        game[b, layout.DRAW_SIZE] = n
    else:
        # flip a new top from the fresh pile
        discard_pile[b, 0] = draw_pile[b, n - 1]
        game[b, layout.DISCARD_SIZE] = 1
        game[b, layout.DRAW_SIZE] = n - 1


@jit
def place_held(grid, slot_state, discard_pile, game, seat, params, b, slot):
    """Swap the held card into ``slot``; the replaced card goes face up on the pile."""
    actor = game[b, layout.CURRENT]
    push_discard(discard_pile, game, b, grid[b, actor, slot])
    grid[b, actor, slot] = game[b, layout.HELD]
    slot_state[b, actor, slot] = layout.FACE_UP
    game[b, layout.HELD] = 0
    eliminate_lines(grid, slot_state, discard_pile, game, seat, params, b, actor)


@jit
def apply_action(grid, slot_state, draw_pile, discard_pile, game, seat, rng, final_grid,
                 final_state, params, deck, b, action):
    """Apply one legal action to game ``b``; returns the event bits."""
    num_slots = params[layout.P_SLOTS]
    phase = game[b, layout.PHASE]
    actor = game[b, layout.CURRENT]
    game[b, layout.DECISIONS] += 1
    if phase == INITIAL_REVEAL:
        # no elimination yet: lines are checked once every seat is done (finish_setup)
        slot_state[b, actor, action] = layout.FACE_UP
        game[b, layout.REVEALS_DONE] += 1
        done = game[b, layout.REVEALS_DONE]
        if done >= params[layout.P_PLAYERS] * params[layout.P_INITIAL_REVEALS]:
            finish_setup(grid, slot_state, discard_pile, game, seat, rng, params, b)
        else:
            game[b, layout.CURRENT] = done % params[layout.P_PLAYERS]
        return 0
    if phase == CHOOSE_SOURCE:
        if action == num_slots:
            if game[b, layout.DRAW_SIZE] == 0:
                refill_draw_pile(draw_pile, discard_pile, game, rng, params, b)
            game[b, layout.DRAW_SIZE] -= 1
            game[b, layout.HELD] = draw_pile[b, game[b, layout.DRAW_SIZE]]
            game[b, layout.PHASE] = PLACE_DRAWN
        else:
            game[b, layout.DISCARD_SIZE] -= 1
            game[b, layout.HELD] = discard_pile[b, game[b, layout.DISCARD_SIZE]]
            game[b, layout.PHASE] = PLACE_DISCARD
        return 0
    if phase == PLACE_DRAWN and action == 2 * num_slots + 2:
        push_discard(discard_pile, game, b, game[b, layout.HELD])
        game[b, layout.HELD] = 0
        game[b, layout.PHASE] = REVEAL_AFTER_DISCARD
        return 0
    if phase == PLACE_DRAWN or phase == PLACE_DISCARD:
        place_held(grid, slot_state, discard_pile, game, seat, params, b, action - num_slots - 2)
    else:  # REVEAL_AFTER_DISCARD
        slot_state[b, actor, action] = layout.FACE_UP
        eliminate_lines(grid, slot_state, discard_pile, game, seat, params, b, actor)
    return end_turn(grid, slot_state, draw_pile, discard_pile, game, seat, rng, final_grid,
                    final_state, params, deck, b)


@jit
def step_batch(grid, slot_state, draw_pile, discard_pile, game, seat, rng, final_grid,
               final_state, params, deck, actions, events):
    """Apply ``actions`` (int64, shape (B,); -1 = leave that game alone) to every game.

    Legality of every action is checked first, against `legal_mask_into`; if one is
    illegal nothing changes and the index of the first offending game is returned.
    Otherwise the actions are applied, ``events`` (int32, shape (B,)) receives each
    game's event bits, and -1 is returned.
    """
    num_actions = 2 * params[layout.P_SLOTS] + 3
    mask = np.empty(num_actions, np.bool_)
    for b in range(game.shape[0]):
        action = actions[b]
        if action == -1:
            continue
        # any other negative id is an error, not a second way to skip a game
        if action < 0 or action >= num_actions:
            return b
        legal_mask_into(b, slot_state, game, params, mask)
        if not mask[action]:
            return b
    apply_actions(grid, slot_state, draw_pile, discard_pile, game, seat, rng, final_grid,
                  final_state, params, deck, actions, events)
    return -1


@jit
def apply_actions(grid, slot_state, draw_pile, discard_pile, game, seat, rng, final_grid,
                  final_state, params, deck, actions, events):
    """`step_batch` without its legality check, for callers that checked every action
    against a mask of `legal_mask_into` already. ``events`` (int32 (B,)) gets each game's
    event bits (0 where ``actions`` is -1)."""
    for b in range(game.shape[0]):
        events[b] = 0
        if actions[b] >= 0:
            events[b] = apply_action(grid, slot_state, draw_pile, discard_pile, game, seat,
                                     rng, final_grid, final_state, params, deck, b,
                                     actions[b])


@jit
def start_games(grid, slot_state, draw_pile, discard_pile, game, seat, rng, final_grid,
                final_state, params, deck, which, seeds, stacked):
    """Start new games at batch indices ``which`` (int64) with ``seeds`` (uint64)."""
    for k in range(which.shape[0]):
        start_game(grid, slot_state, draw_pile, discard_pile, game, seat, rng, final_grid,
                   final_state, params, deck, which[k], seeds[k], stacked)


@jit
def random_legal_play(grid, slot_state, draw_pile, discard_pile, game, seat, rng, final_grid,
                      final_state, params, deck, decisions, policy_rng, events):
    """Play ``decisions`` uniformly random legal decisions in every game (benchmarks).

    Finished games restart from the next seed of their own stream. The policy draws from
    ``policy_rng`` (uint64, shape (B,)), never from the games' streams. The event bits of
    every decision are OR-ed into ``events`` (int32, shape (B,); not cleared first).
    Returns the number of decisions taken.
    """
    num_actions = 2 * params[layout.P_SLOTS] + 3
    mask = np.empty(num_actions, np.bool_)
    taken = 0
    for b in range(game.shape[0]):
        for _ in range(decisions):
            if game[b, layout.PHASE] == GAME_OVER:
                seed = next_random(rng, b)
                start_game(grid, slot_state, draw_pile, discard_pile, game, seat, rng,
                           final_grid, final_state, params, deck, b, seed, deck[:0])
            legal_mask_into(b, slot_state, game, params, mask)
            n_legal = 0
            for a in range(num_actions):
                if mask[a]:
                    n_legal += 1
            pick = random_below(policy_rng, b, n_legal)
            for a in range(num_actions):
                if mask[a]:
                    if pick == 0:
                        events[b] |= apply_action(grid, slot_state, draw_pile, discard_pile,
                                                  game, seat, rng, final_grid, final_state,
                                                  params, deck, b, a)
                        break
                    pick -= 1
            taken += 1
    return taken


# ---------------------------------------------------------------- what a seat knows


@jit
def value_index_table(card_values):
    """Lookup ``table[value - card_values[0]]`` -> index of that value (int64)."""
    low = card_values[0]
    table = np.full(card_values[-1] - low + 1, -1, np.int64)
    for i in range(card_values.shape[0]):
        table[card_values[i] - low] = i
    return table


@jit
def unseen_counts_into(b, observer, grid, slot_state, discard_pile, game, card_values,
                       card_counts, table, out):
    """Copies of each value whose place ``observer`` cannot know, into ``out`` (V,).

    Public: every face-up grid card, the whole discard pile, and a card taken from the
    discard pile while it is held. Private to the holder: a card just drawn.
    """
    low = card_values[0]
    out[:] = card_counts
    for p in range(grid.shape[1]):
        for s in range(grid.shape[2]):
            if slot_state[b, p, s] == layout.FACE_UP:
                out[table[grid[b, p, s] - low]] -= 1
    for i in range(game[b, layout.DISCARD_SIZE]):
        out[table[discard_pile[b, i] - low]] -= 1
    phase = game[b, layout.PHASE]
    if phase == PLACE_DISCARD or (phase == PLACE_DRAWN and game[b, layout.CURRENT] == observer):
        out[table[game[b, layout.HELD] - low]] -= 1


@jit
def unseen_counts_batch(grid, slot_state, discard_pile, game, card_values, card_counts,
                        observers, out):
    """`unseen_counts_into` for every game; ``observers`` int64 (B,), ``out`` (B, V)."""
    table = value_index_table(card_values)
    for b in range(game.shape[0]):
        unseen_counts_into(b, observers[b], grid, slot_state, discard_pile, game,
                           card_values, card_counts, table, out[b])
