"""The reward: one definition for every env view (AEC, single-agent, batched VecEnv).

At each round end every seat gets ``-(own round score - mean of the others' round
scores) / REWARD_SCORE_SCALE``; at the end of a game (when the game-end bonus applies) the
``k`` seats with the lowest total share ``+WIN_REWARD`` and the others share
``-WIN_REWARD`` (nothing when every seat ties). A truncated step (turn cap) earns nothing.
`seat_rewards_into` is compiled so the batched views can call it inside their loops; the
AEC env calls the same function on its batch of one game.

`grid_potential` is the potential of the shaping that training adds on top
(`agents.training.shaping`), here so that what reads a trained critic (the search's
``leaf=critic``) can undo it without importing training.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from skyjo_env.core import layout
from skyjo_env.core.jit import jit

if TYPE_CHECKING:
    from skyjo_env.encoding import ObservationLayout

#: Round scores are divided by this in the round reward.
REWARD_SCORE_SCALE = 100.0
#: The winners share +WIN_REWARD at game end, the other seats share -WIN_REWARD.
WIN_REWARD = 1.0


@jit
def seat_rewards_into(event, seat, b, game_bonus, out):
    """Write every seat's reward for one step of game ``b`` into ``out`` (float64 (P,)).

    Args:
        event: The step's event bits for game ``b`` (``EVENT_*``).
        seat: int32 (B, P, NUM_SEAT_FIELDS), the engine's per-seat counters after the step.
        b: The game.
        game_bonus: Whether the game-end placement reward applies (``"game"`` episodes).
        out: float64 (P,), overwritten (zeros when nothing was scored).

    Returns:
        True if any reward is non-zero.
    """
    players = out.shape[0]
    out[:] = 0.0
    if event == 0 or (event & layout.EVENT_TRUNCATED) != 0:
        # a truncated round is not scored, and a truncated game has no winner
        return False
    if (event & layout.EVENT_ROUND_ENDED) != 0:
        total = 0.0
        for p in range(players):
            total += seat[b, p, layout.ROUND_SCORE]
        for p in range(players):
            own = float(seat[b, p, layout.ROUND_SCORE])
            others = (total - own) / (players - 1)
            out[p] = -(own - others) / REWARD_SCORE_SCALE
    if game_bonus and (event & layout.EVENT_GAME_ENDED) != 0:
        add_placement_rewards(seat[b, :, layout.TOTAL], out)
    return True


@jit
def add_placement_rewards(totals, out):
    """Add the game-end placement reward to ``out``: the ``k`` seats with the lowest total
    share ``+WIN_REWARD``, the others share ``-WIN_REWARD`` (nothing when every seat ties).

    Args:
        totals: int (P,), every seat's game total.
        out: float64 (P,), added to in place.
    """
    players = totals.shape[0]
    best = totals.min()
    k = 0
    for p in range(players):
        if totals[p] == best:
            k += 1
    if k < players:
        for p in range(players):
            if totals[p] == best:
                out[p] += WIN_REWARD / k
            else:
                out[p] -= WIN_REWARD / (players - k)


def placement_rewards(totals: np.ndarray) -> np.ndarray:
    """Every seat's game-end placement reward (`add_placement_rewards`).

    Args:
        totals: int (P,), every seat's game total.

    Returns:
        float64 (P,); it sums to 0.
    """
    out = np.zeros(len(totals), np.float64)
    add_placement_rewards(np.asarray(totals, np.int64), out)
    return out


def grid_potential(observations: np.ndarray, obs_layout: ObservationLayout) -> np.ndarray:
    """The shaping potential ``Phi`` of each observation: minus the observer's expected
    grid value / 100 (face-down cards at the deck mean).

    Training adds ``weight * (gamma * Phi(next) - Phi(previous))`` to each reward
    (``Phi`` = 0 after the episode's end); summed over an episode this is a constant, so it
    leaves the best policy unchanged (Ng et al., 1999) while crediting a good swap at once
    instead of at the round end.

    Args:
        observations: float32 (N, O).
        obs_layout: The observation layout.

    Returns:
        float64 (N,): ``-(face-up sum + face-down count * deck mean) / 100``.
    """
    pieces = obs_layout.describe()
    rules = obs_layout.rules
    deck_mean = float(rules.deck_array().mean())
    face_up = observations[:, pieces["own_values"]].sum(axis=1) * obs_layout.value_scale
    face_down = observations[:, pieces["own_hidden"]].sum(axis=1)
    return -(face_up + face_down * deck_mean) / 100.0
