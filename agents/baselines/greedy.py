"""The ``greedy`` baseline: fixed thresholds, no card counting.

* Initial reveals and reveals after a discard: the first slot the mask lets it turn up
  (its first face-down slot).
* Choose source: take the discard top if it is at most ``take_threshold`` (4) or lower
  than its highest face-up card minus ``improve_margin`` (6), and the mask allows taking;
  else draw.
* Taken discard card: replace the highest face-up card if that is higher, else the first
  face-down slot.
* Drawn card: if it is at most ``keep_threshold`` (4), place it like a taken card; else if
  it is lower than the highest face-up card, replace that; else discard it and reveal.

Every slot it places on or reveals is one the mask allows, so each decision is legal by
construction (see `agents.baselines.common`).
"""

from __future__ import annotations

import numpy as np

from agents.baselines.common import (
    CHOOSE_SOURCE,
    DISCARD_TOP,
    HELD_CARD,
    INITIAL_REVEAL,
    PLACE_DISCARD,
    PLACE_DRAWN,
    REVEAL_AFTER_DISCARD,
    CompiledHeuristic,
    card,
    choose_source,
    first_illegal,
    own_grid,
    phase_of,
    place_action,
)
from skyjo_env.core.jit import jit
from skyjo_env.core.rules import SkyjoRules


@jit
def _first_revealable(mask, slots):
    """The first slot the mask lets this seat turn face up (REVEAL id = slot), or -1."""
    for s in range(slots):
        if mask[s]:
            return s
    return -1


@jit
def _highest_above(values, hidden, mask, slots, held):
    """The placeable face-up slot with the highest card above ``held`` (first on ties), or -1."""
    best, best_value = -1, -1e9
    for s in range(slots):
        if mask[slots + 2 + s] and not hidden[s] and values[s] > held and values[s] > best_value:
            best, best_value = s, values[s]
    return best


@jit
def _first_face_down_placeable(hidden, mask, slots):
    """The first face-down slot the mask lets the held card go to, or -1."""
    for s in range(slots):
        if mask[slots + 2 + s] and hidden[s]:
            return s
    return -1


@jit
def _place_slot(values, hidden, mask, slots, held):
    """Replace the highest face-up card above ``held``, else the first face-down slot."""
    slot = _highest_above(values, hidden, mask, slots, held)
    if slot < 0:
        slot = _first_face_down_placeable(hidden, mask, slots)
    return slot


@jit
def greedy_actions(obs, masks, offsets, slots, scale, take_threshold, keep_threshold,
                   improve_margin, out):
    """Greedy decisions for every row; see the module docstring.

    Args:
        obs: float32 (N, O) observations.
        masks: bool (N, 2S+3) legal-action masks.
        offsets: int64 piece starts (`agents.baselines.common.layout_arrays`).
        slots: S, slots per grid.
        scale: The observation's value scale.
        take_threshold, keep_threshold, improve_margin: The rule's thresholds.
        out: int64 (N,), filled with legal action ids (-1: no legal action of the phase
            the observation shows).

    Returns:
        `first_illegal` of ``out``: -1 when every row got a legal action.
    """
    values = np.empty(slots, np.float64)
    hidden = np.empty(slots, np.bool_)
    cleared = np.empty(slots, np.bool_)
    discard = 2 * slots + 2
    for n in range(obs.shape[0]):
        mask = masks[n]
        phase = phase_of(obs, n, offsets)
        own_grid(obs, n, offsets, slots, scale, values, hidden, cleared)
        highest = -1e9
        for s in range(slots):
            if not hidden[s] and not cleared[s] and values[s] > highest:
                highest = values[s]
        action = -1
        if phase == INITIAL_REVEAL or phase == REVEAL_AFTER_DISCARD:
            action = _first_revealable(mask, slots)
        elif phase == CHOOSE_SOURCE:
            top = card(obs, n, offsets[DISCARD_TOP], scale)
            take = top <= take_threshold or top < highest - improve_margin
            action = choose_source(mask, slots, take)
        elif phase == PLACE_DISCARD:
            held = card(obs, n, offsets[HELD_CARD], scale)
            action = place_action(slots, _place_slot(values, hidden, mask, slots, held))
        elif phase == PLACE_DRAWN:
            held = card(obs, n, offsets[HELD_CARD], scale)
            if held <= keep_threshold:
                slot = _place_slot(values, hidden, mask, slots, held)
            else:
                # a high card only replaces a higher face-up one, never a face-down card
                slot = _highest_above(values, hidden, mask, slots, held)
            action = place_action(slots, slot)
            if action < 0 and mask[discard]:
                action = discard
        out[n] = action
    return first_illegal(masks, out)


class GreedyAgent(CompiledHeuristic):
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
        return greedy_actions(observations, action_masks, self.offsets, self.rules.num_slots,
                              self.scale, self.take_threshold, self.keep_threshold,
                              self.improve_margin, out)
