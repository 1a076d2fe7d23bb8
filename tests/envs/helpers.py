"""Shared pieces of the env tests: deterministic policies and AEC-env drivers."""

from __future__ import annotations

import numpy as np

from skyjo_env.core.layout import ROUND_SCORE


def pick_from(observation: np.ndarray, mask: np.ndarray) -> int:
    """A deterministic legal action that depends on the observation (so that two views that
    hand different observations soon take different actions).

    It never takes the discard top: a pure function of the observation could otherwise
    loop forever (take, swap into a face-up slot, ...) until the turn cap.
    """
    mask = np.asarray(mask).astype(bool)
    take_discard = (mask.size - 3) // 2 + 1
    if mask[take_discard - 1]:  # DRAW is legal: choose the source without the discard
        mask = mask.copy()
        mask[take_discard] = False
    legal = np.flatnonzero(mask)
    key = int(round(float(np.abs(observation.astype(np.float64)).sum()) * 1000))
    return int(legal[key % legal.size])


class PickAgent:
    """An `Agent` playing `pick_from` row by row; counts its decisions."""

    def __init__(self, name: str = "pick"):
        self.name = name
        self.decisions = 0

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """`pick_from` per row."""
        self.decisions += len(action_masks)
        return np.array(
            [pick_from(o, m) for o, m in zip(observations, action_masks, strict=True)], np.int64
        )


def expected_round_rewards(round_scores) -> np.ndarray:
    """The documented round reward, written out independently of the env code."""
    scores = np.asarray(round_scores, dtype=np.float64)
    players = len(scores)
    return np.array(
        [
            -(scores[p] - (scores.sum() - scores[p]) / (players - 1)) / 100.0
            for p in range(players)
        ]
    )


def expected_game_rewards(totals) -> np.ndarray:
    """The documented placement reward, written out independently of the env code."""
    totals = np.asarray(totals)
    players = len(totals)
    winners = [p for p in range(players) if totals[p] == totals.min()]
    k = len(winners)
    if k == players:
        return np.zeros(players)
    return np.array([1.0 / k if p in winners else -1.0 / (players - k) for p in range(players)])


def advance_to(game, learner: str) -> float:
    """Play `pick_from` for every other agent of a raw AEC env until ``learner`` is to act
    or the game is over; returns the learner's reward collected on the way."""
    collected = 0.0
    while game.agent_selection != learner and not (
        game.terminations[learner] or game.truncations[learner]
    ):
        agent = game.agent_selection
        observation = game.observe(agent)
        game.step(pick_from(observation["observation"], observation["action_mask"]))
        collected += game.rewards[learner]
    return collected


def round_scores(game) -> np.ndarray:
    """The last scored round's scores of a raw AEC env's game."""
    return game.batch.seat[0, :, ROUND_SCORE].copy()
