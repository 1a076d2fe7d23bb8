"""Shared by the leak tests: redeal what a seat cannot see, keep everything public.

Imported by basename (``from hidden_cards import ...``): ``tests/agents`` has no
``__init__.py`` because a package there would be named ``agents`` and shadow the project's.
"""

from __future__ import annotations

import numpy as np

from skyjo_env.core import layout


def hide_differently(state, b: int, rng: np.random.Generator) -> None:
    """Shuffle game ``b``'s face-down cards together with its draw pile (public info kept)."""
    hidden = np.argwhere(state.slot_state[b] == layout.HIDDEN)
    draw = state.draw_pile[b, : state.game[b, layout.DRAW_SIZE]]
    cards = np.concatenate([state.grid[b][tuple(hidden.T)], draw])
    rng.shuffle(cards)
    state.grid[b][tuple(hidden.T)] = cards[: len(hidden)]
    state.draw_pile[b, : state.game[b, layout.DRAW_SIZE]] = cards[len(hidden):]
