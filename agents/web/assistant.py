"""The assistant: a real table, entered by hand, rebuilt as an engine game for the search.

The person enters what they can see at the table (`agents.web.schemas.TableInput`): their
own grid with face-down and cleared slots, the other players' grids in playing order
after them, the discard pile's top and the cards under it, the scores, the decision they
face and, when they hold a drawn card, its value. `table_state` checks that some real game
can show exactly this and builds an engine game of it (the person in seat 0, face-down
cards and the draw pile filled with the unseen cards: the search redeals them anyway).
Inputs that no game can reach raise `TableError` naming the field.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from skyjo_env.core import Phase, SkyjoRules, layout
from skyjo_env.core.engine import BatchState, new_batch

#: The decisions the assistant answers (the search does not decide initial reveals).
TABLE_PHASES = {
    "choose_source": Phase.CHOOSE_SOURCE,
    "place_drawn": Phase.PLACE_DRAWN,
    "reveal_after_discard": Phase.REVEAL_AFTER_DISCARD,
}
#: How a slot is entered: a card value, ``"?"`` face down, ``"x"`` cleared.
HIDDEN_MARK = "?"
CLEARED_MARK = "x"


class TableError(ValueError):
    """A table no real game can show; ``field`` names the input at fault."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def _grid_field(seat: int) -> str:
    return "my_grid" if seat == 0 else f"others[{seat - 1}]"


def _parse_grid(cells: list[Any], seat: int, rules: SkyjoRules) -> tuple[np.ndarray, np.ndarray]:
    """Slot states int8 (S,) and values int16 (S,) of one entered grid."""
    name = _grid_field(seat)
    if len(cells) != rules.num_slots:
        raise TableError(name, f"has {len(cells)} slots; a {rules.rows}x{rules.cols} grid has "
                         f"{rules.num_slots} (row by row)")
    states = np.empty(rules.num_slots, np.int8)
    values = np.zeros(rules.num_slots, np.int16)
    deck_values = set(rules.card_values.tolist())
    for slot, cell in enumerate(cells):
        if cell == HIDDEN_MARK:
            states[slot] = layout.HIDDEN
        elif cell == CLEARED_MARK:
            states[slot] = layout.CLEARED
        elif isinstance(cell, int) and not isinstance(cell, bool) and cell in deck_values:
            states[slot], values[slot] = layout.FACE_UP, cell
        else:
            raise TableError(f"{name}[{slot}]", f"{cell!r} is not a card of the deck "
                             f"({min(deck_values)}..{max(deck_values)}), "
                             f"'{HIDDEN_MARK}' (face down) or '{CLEARED_MARK}' (cleared)")
    _check_cleared(states, values, seat, rules)
    return states, values


def _check_cleared(states: np.ndarray, values: np.ndarray, seat: int, rules: SkyjoRules) -> None:
    """Cleared slots come in whole eliminated lines (columns, or rows where allowed)."""
    grid = states.reshape(rules.rows, rules.cols) == layout.CLEARED
    if not grid.any():
        return
    lines = np.zeros_like(grid)
    if rules.column_elimination:
        lines |= grid.all(axis=0)[None, :]
    if rules.row_elimination:
        lines |= grid.all(axis=1)[:, None]
    stray = np.flatnonzero((grid & ~lines).ravel())
    if stray.size:
        allowed = " or ".join(word for word, on in (("columns", rules.column_elimination),
                                                  ("rows", rules.row_elimination)) if on)
        why = f"only whole {allowed} are cleared" if allowed else "these rules clear no lines"
        raise TableError(f"{_grid_field(seat)}[{int(stray[0])}]",
                         f"a cleared slot outside a cleared line ({why})")


def table_state(rules: SkyjoRules, table: Any) -> BatchState:
    """The engine game of an entered table, the person in seat 0 to act.

    Args:
        rules: The rules (``num_players`` = 1 + the number of other grids).
        table: A `agents.web.schemas.TableInput` (or an object with its fields).

    Returns:
        A `BatchState` of one game.

    Raises:
        TableError: A field no real game can show, named.
    """
    players = rules.num_players
    grids = [table.my_grid, *table.others]
    parsed = [_parse_grid(list(cells), seat, rules) for seat, cells in enumerate(grids)]
    states = np.stack([p[0] for p in parsed])
    values = np.stack([p[1] for p in parsed])
    phase = TABLE_PHASES.get(table.phase)
    if phase is None:
        raise TableError("phase", f"{table.phase!r} is not one of {', '.join(TABLE_PHASES)}")
    _check_reveals(states, rules)
    _check_finisher(states, table.finisher, players)
    deck_values = set(rules.card_values.tolist())
    if table.discard_top not in deck_values:
        raise TableError("discard_top", f"{table.discard_top!r} is not a card of the deck")
    for index, card in enumerate(table.discard_below):
        if card not in deck_values:
            raise TableError(f"discard_below[{index}]", f"{card!r} is not a card of the deck")
    held = None
    if phase == Phase.PLACE_DRAWN:
        if table.drawn_card is None:
            raise TableError("drawn_card", "give the card you drew (phase place_drawn)")
        if table.drawn_card not in deck_values:
            raise TableError("drawn_card", f"{table.drawn_card!r} is not a card of the deck")
        held = int(table.drawn_card)
    elif table.drawn_card is not None:
        raise TableError("drawn_card", f"only in phase place_drawn (phase is {table.phase})")
    scores = list(table.scores) if table.scores is not None else [0] * players
    if len(scores) != players:
        raise TableError("scores", f"has {len(scores)} totals for {players} players "
                         "(yours first, then the others in order)")
    for index, total in enumerate(scores):
        if total >= rules.target_score:
            raise TableError(f"scores[{index}]", f"{total} reaches target_score "
                             f"{rules.target_score}: the game would be over")
    seen = values[states == layout.FACE_UP].tolist() + [table.discard_top, *table.discard_below]
    if held is not None:
        seen.append(held)
    _check_counts(seen, rules)
    return _build(rules, states, values, phase, held, table, scores)


def _check_reveals(states: np.ndarray, rules: SkyjoRules) -> None:
    for seat in range(states.shape[0]):
        if int((states[seat] != layout.HIDDEN).sum()) < rules.initial_reveals:
            raise TableError(_grid_field(seat),
                             f"fewer than {rules.initial_reveals} cards face up: every player "
                             f"turns up {rules.initial_reveals} before the first turn, and cards "
                             "never go face down again")
    if not (states[0] == layout.HIDDEN).any():
        raise TableError("my_grid", "has no face-down card: you would have ended the round "
                         "when you turned up your last one")


def _check_finisher(states: np.ndarray, finisher: int | None, players: int) -> None:
    done = [seat for seat in range(1, players) if not (states[seat] == layout.HIDDEN).any()]
    if finisher is None:
        if done:
            raise TableError("finisher", f"others[{done[0] - 1}] has no face-down card, so "
                             "someone has gone out: say who (finisher)")
        return
    if not 1 <= finisher < players:
        raise TableError("finisher", f"must be a seat of another player, 1..{players - 1} "
                         f"(others[0] is seat 1), got {finisher}")
    if (states[finisher] == layout.HIDDEN).any():
        raise TableError("finisher", f"seat {finisher} (others[{finisher - 1}]) still has "
                         "face-down cards, so it has not gone out")


def _check_counts(seen: list[int], rules: SkyjoRules) -> None:
    counts = Counter(int(card) for card in seen)
    deck = dict(rules.deck)
    for value, count in sorted(counts.items()):
        if count > deck[value]:
            raise TableError("cards", f"{count} cards of value {value} are visible (grids, "
                             f"discard pile, drawn card), but the deck has only {deck[value]}")
    hidden_room = rules.deck_size - len(seen)
    if hidden_room < 0:
        raise TableError("discard_below", "more cards than the deck holds")


def _build(rules: SkyjoRules, states: np.ndarray, values: np.ndarray, phase: Phase,
           held: int | None, table: Any, scores: list[int]) -> BatchState:
    visible = Counter(values[states == layout.FACE_UP].tolist())
    visible.update([int(table.discard_top), *map(int, table.discard_below)])
    if held is not None:
        visible[held] += 1
    pool = []
    for value, count in rules.deck:
        pool.extend([value] * (count - visible[value]))
    hidden = states == layout.HIDDEN
    need = int(hidden.sum())
    draw_size = len(pool) - need
    if draw_size < 1:
        raise TableError("discard_below", f"the grids' {need} face-down cards and the cards "
                         f"seen leave {draw_size} cards for the draw pile; it is never empty "
                         "at a decision (it is reshuffled from the discard pile)")
    state = new_batch(rules, 1)
    state.slot_state[0] = states
    grid = values.copy()
    grid[hidden] = pool[:need]
    state.grid[0] = grid
    below = [int(card) for card in table.discard_below]
    discard = [*below, int(table.discard_top)]
    state.discard_pile[0, : len(discard)] = discard
    state.draw_pile[0, :draw_size] = pool[need:]
    game = state.game[0]
    game[layout.PHASE] = phase
    game[layout.CURRENT] = 0
    game[layout.HELD] = held if held is not None else 0
    game[layout.FINISHER] = -1 if table.finisher is None else table.finisher
    game[layout.PREV_FINISHER] = -1
    game[layout.REVEALS_DONE] = rules.num_players * rules.initial_reveals
    game[layout.DRAW_SIZE] = draw_size
    game[layout.DISCARD_SIZE] = len(discard)
    turns = table.round_turns
    if turns is None:  # about one card turned up or swapped in per turn
        turns = int(max(0, (states != layout.HIDDEN).sum() - rules.num_players * rules.initial_reveals))
    game[layout.TURN] = turns
    state.seat[0, :, layout.TOTAL] = scores
    return state


__all__ = ["CLEARED_MARK", "HIDDEN_MARK", "TABLE_PHASES", "TableError", "table_state"]
