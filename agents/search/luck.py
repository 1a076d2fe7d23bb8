"""Luck of a rollout, to take out of its value (``search(luck=adjusted)``).

A rollout's value mixes what its first action is worth with the luck of the cards it
met: a face-down card turned up, a card drawn from the pile, a face-down card swapped out
to the discard pile. Every one of these is a card drawn at random from the cards nobody
has seen, so its value minus the mean of those unseen cards (``mu``, taken just before)
is a martingale difference: zero on average, whatever the policies did before. Summed
over a rollout, per kind and per side (the searching seat, seat 0, or the mean over the
others), they give the `FEATURES` of a rollout; subtracting ``features @ beta`` from its
value changes no action's expected value for any ``beta``, and with ``beta`` fitted by
least squares (within each row and action, so that no action's own effect leaks in) it
removes the share of the spread the luck explains: the variance-reduction idea of
AIVAT (Burch et al., 2018) applied to the search's paired comparisons.

Card values in the sampled games are the sampled ones: the features use only what the
search drew itself, never the real game's hidden cards.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from skyjo_env.core import layout, unseen_counts
from skyjo_env.core.engine import BatchState

#: Columns of a rollout's luck: the excess (value - mean unseen) of the cards that
#: became known, summed per kind, for seat 0 and for the others (their mean).
FEATURES = ("own_reveal", "others_reveal", "own_draw", "others_draw", "own_swap",
            "others_swap")

#: Fewest rollouts per feature for a fit of ``beta`` (fewer: values left as they are).
MIN_ROLLOUTS_PER_FEATURE = 20


class BeforeStep(NamedTuple):
    """What a step's luck is measured against, taken just before it.

    Attributes:
        hidden: bool (B, P, S), the face-down slots.
        grid: int16 (B, P, S), the (sampled) card values.
        mean_unseen: float64 (B,), the mean value of the cards nobody has seen.
        draw_top: float64 (B,), the top card of the draw pile (0 if the pile is empty).
        actor: int64 (B,), the seat to act.
    """

    hidden: np.ndarray
    grid: np.ndarray
    mean_unseen: np.ndarray
    draw_top: np.ndarray
    actor: np.ndarray


def before_step(state: BatchState) -> BeforeStep:
    """Snapshot of ``state`` for `step_luck`."""
    actor = state.current_player.astype(np.int64)
    counts = unseen_counts(state, actor).astype(np.float64)
    mean_unseen = counts @ state.rules.card_values / np.maximum(counts.sum(axis=1), 1.0)
    sizes = state.game[:, layout.DRAW_SIZE].astype(np.int64)
    rows = np.arange(state.batch_size)
    draw_top = np.where(sizes > 0, state.draw_pile[rows, np.maximum(sizes - 1, 0)], 0)
    return BeforeStep(state.slot_state == layout.HIDDEN, state.grid.copy(), mean_unseen,
                      draw_top.astype(np.float64), actor)


def step_luck(
    before: BeforeStep, state: BatchState, actions: np.ndarray, events: np.ndarray
) -> np.ndarray:
    """The luck of one batch step, per game: float64 (B, len(FEATURES)).

    Args:
        before: `before_step` of the batch just before the step.
        state: The batch after the step.
        actions: int64 (B,), the actions stepped (-1: game untouched, no luck).
        events: int (B,), the step's event bits (a round's end reveals every face-down
            card: read from the final grids, since the step dealt the next round).
    """
    slots = state.rules.num_slots
    ended = (events & layout.EVENT_ROUND_ENDED) != 0
    after = np.where(ended[:, None, None], state.final_slot_state, state.slot_state)
    turned = before.hidden & (after != layout.HIDDEN)
    excess = (before.grid - before.mean_unseen[:, None, None]) * turned
    rows = np.arange(actions.shape[0])
    placed = (actions >= slots + 2) & (actions <= 2 * slots + 1)
    swapped = np.zeros(excess.shape[:2])
    place_rows = rows[placed]
    if place_rows.size:
        seat, slot = before.actor[place_rows], actions[place_rows] - (slots + 2)
        swapped[place_rows, seat] = excess[place_rows, seat, slot]  # to the discard pile
        excess[place_rows, seat, slot] = 0.0  # the slot now holds the placed card
    drawn = np.zeros(excess.shape[:2])
    draw_rows = rows[actions == slots]
    drawn[draw_rows, before.actor[draw_rows]] = (before.draw_top[draw_rows]
                                                 - before.mean_unseen[draw_rows])
    luck = np.empty((actions.shape[0], len(FEATURES)))
    for column, per_seat in enumerate((excess.sum(axis=2), drawn, swapped)):
        luck[:, 2 * column] = per_seat[:, 0]
        luck[:, 2 * column + 1] = per_seat[:, 1:].mean(axis=1)
    return luck


def luck_adjusted(values: np.ndarray, luck: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Rollout values with their fitted luck taken out.

    ``beta`` is the least-squares fit of the values on the luck features after both are
    centred within each group (a row's action: its own mean stays out of the fit); the
    result is ``values - luck @ beta``. Too few rollouts for a fit: ``values`` unchanged.

    Args:
        values: float64 (N,), one value per rollout.
        luck: float64 (N, F), the rollouts' luck (`step_luck` summed).
        groups: int (N,), the rollout's group (one per row and first action).

    Returns:
        float64 (N,).
    """
    if values.shape[0] < MIN_ROLLOUTS_PER_FEATURE * luck.shape[1]:
        return values
    _, index, sizes = np.unique(groups, return_inverse=True, return_counts=True)

    def centred(array: np.ndarray) -> np.ndarray:
        sums = np.zeros((sizes.size,) + array.shape[1:])
        np.add.at(sums, index, array)
        return array - (sums / sizes.reshape((-1,) + (1,) * (array.ndim - 1)))[index]

    beta, *_ = np.linalg.lstsq(centred(luck), centred(values), rcond=None)
    return values - luck @ beta


__all__ = ["FEATURES", "BeforeStep", "before_step", "luck_adjusted", "step_luck"]
