"""Text rendering of one game of a `BatchState`, for people watching a game.

`render_ansi(state, b)` draws every grid (face-down cards as ``##``, cleared slots as
``.``), each seat's total and visible round score, whose turn it is, the phase, the held
card, the discard top, the pile sizes and the finisher. Face-down values stay hidden unless
``show_hidden=True`` (debugging only), which prints them as ``h5`` instead of ``##``.
"""

from __future__ import annotations

import numpy as np

from skyjo_env.core import layout
from skyjo_env.core.actions import Phase
from skyjo_env.core.engine import BatchState, winners
from skyjo_env.core.rules import SkyjoRules

#: Grids drawn side by side before wrapping to a new band of seats.
GRIDS_PER_BAND = 4
_CELL = 4  # characters per grid cell
_GAP = "   "


def _cell(value: int, slot_state: int, show_hidden: bool) -> str:
    if slot_state == layout.CLEARED:
        return "   .".rjust(_CELL)
    if slot_state == layout.HIDDEN:
        return f"h{value}".rjust(_CELL) if show_hidden else "  ##"
    return f"{value:d}".rjust(_CELL)


def _grid_block(
    state: BatchState, b: int, p: int, rules: SkyjoRules, show_hidden: bool
) -> list[str]:
    """Header lines plus one line per grid row, all of the same width."""
    game = state.game[b]
    phase = int(game[layout.PHASE])
    width = max(_CELL * rules.cols, 18)
    marks = ""
    if phase != Phase.GAME_OVER and int(game[layout.CURRENT]) == p:
        marks += " <to act"
    if int(game[layout.FINISHER]) == p:
        marks += " [finisher]"
    grid = state.grid[b, p]
    slots = state.slot_state[b, p]
    visible = int(np.where(slots == layout.FACE_UP, grid, 0).sum())
    total = int(state.seat[b, p, layout.TOTAL])
    lines = [f"seat {p}{marks}".ljust(width), f"total {total} visible {visible}".ljust(width)]
    for r in range(rules.rows):
        row = "".join(
            _cell(int(grid[r * rules.cols + c]), int(slots[r * rules.cols + c]), show_hidden)
            for c in range(rules.cols)
        )
        lines.append(row.ljust(width))
    return lines


def render_ansi(
    state: BatchState, b: int = 0, rules: SkyjoRules | None = None, show_hidden: bool = False
) -> str:
    """A multi-line text picture of game ``b``.

    Args:
        state: The batch holding the game.
        b: Index of the game in the batch.
        rules: The rules (defaults to ``state.rules``; only the grid shape is read).
        show_hidden: Print face-down values (``h7``) instead of ``##``: for debugging only,
            never show this to a player.

    Returns:
        The picture as one string, lines separated by ``\\n`` (no trailing newline).
    """
    rules = state.rules if rules is None else rules
    game = state.game[b]
    phase = Phase(int(game[layout.PHASE]))
    players = rules.num_players
    lines = []
    header = (
        f"Skyjo: round {int(game[layout.ROUND]) + 1}, turn {int(game[layout.TURN])}, "
        f"phase {phase.name}"
    )
    if phase != Phase.GAME_OVER:
        header += f", seat {int(game[layout.CURRENT])} to act"
    lines.append(header)
    discard_size = int(game[layout.DISCARD_SIZE])
    top = str(int(state.discard_pile[b, discard_size - 1])) if discard_size else "-"
    piles = (
        f"discard top {top} ({discard_size} cards), "
        f"draw pile {int(game[layout.DRAW_SIZE])} cards"
    )
    if phase == Phase.PLACE_DRAWN:
        piles = f"holding {int(game[layout.HELD])} (drawn), " + piles
    elif phase == Phase.PLACE_DISCARD:
        piles = f"holding {int(game[layout.HELD])} (taken from the discard pile), " + piles
    lines.append(piles)
    finisher = int(game[layout.FINISHER])
    if finisher >= 0:
        lines.append(f"finisher: seat {finisher} (final lap)")
    for first in range(0, players, GRIDS_PER_BAND):
        blocks = [
            _grid_block(state, b, p, rules, show_hidden)
            for p in range(first, min(first + GRIDS_PER_BAND, players))
        ]
        lines.append("")
        for row in zip(*blocks, strict=True):
            lines.append(_GAP.join(row).rstrip())
    if int(game[layout.ROUND]) > 0:
        scores = ", ".join(str(int(s)) for s in state.seat[b, :, layout.ROUND_SCORE])
        lines.append("")
        lines.append(f"last round scores by seat: {scores}")
    if phase == Phase.GAME_OVER:
        if int(game[layout.TRUNCATED]):
            lines.append("game over: truncated by the turn cap (last round not scored)")
        else:
            best = winners(state, b)
            who = " and ".join(f"seat {p}" for p in best)
            lines.append(f"game over: {who} {'win' if len(best) > 1 else 'wins'}")
    return "\n".join(lines)


__all__ = ["render_ansi"]
