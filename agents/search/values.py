"""Leaf values for the search agent from a trained PPO critic (``leaf=critic``).

A MaskablePPO policy trained by `agents.training.trainer` has a value head that estimates
the learner's return from its observation: round margins / 100 (`skyjo_env.rewards`) to
the game's end plus the placement bonus (+-1 in two-player games), with gamma = 1. The
training env added potential-based shaping (potential `skyjo_env.rewards.grid_potential`,
weight ``w``), so the head learned the shaped return ``V(s) - w * Phi(s)``; the unshaped value is therefore
``critic(obs) + w * Phi(obs)``.

`CriticValue` values a rollout game for seat 0 (the searching seat):

- cut (round still running): ``critic(obs_0) + w * Phi(obs_0)``, ``obs_0`` being seat 0's
  observation of the game (what it may know: no sampled face-down card leaks in);
- round ended, game on: the realised round reward of seat 0 plus the critic's value of
  the next round's first position (a new deal, seat 0 to reveal first);
- game ended: the realised round reward plus the placement bonus, times ``1 + b`` for a
  critic trained with ``win_bonus`` = ``b`` (`agents.training.shaping.win_bonus_wrapper`).

The critic was trained only on positions where the learner is to act, so the search
agent cuts rollouts valued by it only where seat 0 is to act (``own_turn_leaves``).
Values are in the training reward's units (1 = 100 points of margin, or a won game).
"""

from __future__ import annotations

import numpy as np

from skyjo_env.core import layout
from skyjo_env.core.actions import Phase
from skyjo_env.core.engine import BatchState
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationEncoder, ObservationLayout
from skyjo_env.rewards import grid_potential, placement_rewards, seat_rewards_into


class CriticValueError(ValueError):
    """A policy that cannot serve as a leaf value (no value head, wrong input size)."""


class CriticValue:
    """Seat 0's value of rollout games from a PPO value head (module docstring).

    Args:
        policy: An sb3-contrib ``MaskableActorCriticPolicy`` (``PPOAgent.policy``) trained
            on ``rules`` with observations of `skyjo_env.encoding`.
        rules: The rules of the games.
        shaping_weight: The weight of the grid-potential shaping the critic was trained
            with (the checkpoint's ``config.shaping``; 0 when it had none).
        win_bonus: The extra weight of the placement reward the critic was trained with
            (the checkpoint's ``config.win_bonus``; 0 when it had none).

    Raises:
        CriticValueError: ``policy`` has no ``predict_values`` or expects another
            observation size; a negative or non-finite ``shaping_weight`` or
            ``win_bonus``.
    """

    #: Cut rollouts only where seat 0 is to act (the critic's training positions).
    own_turn_leaves = True

    def __init__(self, policy, rules: SkyjoRules, shaping_weight: float = 1.0,
                 win_bonus: float = 0.0):
        import torch  # agents may import torch; only a critic leaf needs it

        if not callable(getattr(policy, "predict_values", None)):
            raise CriticValueError(
                f"leaf=critic needs a PPO base agent with a value head; got {type(policy).__name__}"
            )
        obs_layout = ObservationLayout(rules)
        expected = getattr(getattr(policy, "observation_space", None), "shape", None)
        if expected != (obs_layout.size,):
            raise CriticValueError(
                f"leaf=critic: the policy reads observations of shape {expected}, these rules "
                f"encode ({obs_layout.size},)"
            )
        weight, bonus = float(shaping_weight), float(win_bonus)
        for name, value, given in (("shaping_weight", weight, shaping_weight),
                                   ("win_bonus", bonus, win_bonus)):
            if not np.isfinite(value) or value < 0:
                raise CriticValueError(
                    f"leaf=critic: {name} must be a finite number >= 0, got {given!r}"
                )
        self._torch = torch
        self.policy = policy
        self.rules = rules
        self.shaping_weight = weight
        self.win_bonus = bonus
        self._layout = obs_layout
        self._encoder = ObservationEncoder(rules)

    def values_of_observations(self, observations: np.ndarray) -> np.ndarray:
        """Unshaped value estimates: ``critic(obs) + w * Phi(obs)``.

        Args:
            observations: float32 (N, O), each from the seat whose value is wanted.

        Returns:
            float64 (N,).
        """
        torch = self._torch
        obs = np.ascontiguousarray(observations, dtype=np.float32)
        with torch.inference_mode():
            critic = self.policy.predict_values(torch.from_numpy(obs))[:, 0].double().numpy()
        return critic + self.shaping_weight * grid_potential(obs, self._layout)

    def __call__(self, state: BatchState, round_ended: np.ndarray) -> np.ndarray:
        """Seat 0's value of each game: float64 (B,); ``round_ended`` bool (B,).

        A game whose round ended is at the next round's start or over (the engine deals
        the next round inside the step that ends one).
        """
        round_ended = np.asarray(round_ended, dtype=bool)
        values = self.values_of_observations(
            self._encoder.encode(state, np.zeros(state.batch_size, np.int64))
        )
        ended = np.flatnonzero(round_ended)
        if ended.size:
            values[ended] = self._round_rewards(state, ended) + np.where(
                state.phase[ended] == Phase.GAME_OVER, 0.0, values[ended]
            )
        return values

    def _round_rewards(self, state: BatchState, rows: np.ndarray) -> np.ndarray:
        """Seat 0's reward (round margin and, at a game's end, placement times
        ``1 + win_bonus``) of games ``rows`` whose round just ended: the reward the critic
        was trained on."""
        out = np.zeros(self.rules.num_players, np.float64)
        rewards = np.zeros(rows.size, np.float64)
        for i, b in enumerate(rows):
            event = layout.EVENT_ROUND_ENDED
            if state.phase[b] == Phase.GAME_OVER:
                event |= layout.EVENT_GAME_ENDED
            seat_rewards_into(event, state.seat, int(b), True, out)
            rewards[i] = out[0]
            if self.win_bonus and event & layout.EVENT_GAME_ENDED:
                rewards[i] += self.win_bonus * placement_rewards(
                    state.seat[b, :, layout.TOTAL])[0]
        return rewards


class PolicyPrior:
    """A PPO base agent's masked log-probabilities, as ``SearchAgent.prior_fn``.

    Args:
        agent: An `agents.ppo.policy.PPOAgent` (its ``actor``, a ``MaskedActor``).

    Raises:
        CriticValueError: ``agent`` has no masked actor.
    """

    def __init__(self, agent):
        import torch

        actor = getattr(agent, "actor", None)
        if not callable(getattr(actor, "masked_logits", None)):
            raise CriticValueError(
                f"top_actions needs a PPO base agent (action priors); got {type(agent).__name__}"
            )
        self._torch = torch
        self.actor = actor

    def __call__(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """float32 (N, A) log-probabilities from observations float32 (N, O), masks bool
        (N, A); illegal actions get sb3-contrib's masked logit (-1e8)."""
        torch = self._torch
        obs = torch.from_numpy(np.ascontiguousarray(observations, dtype=np.float32))
        masks = torch.from_numpy(np.ascontiguousarray(action_masks, dtype=bool))
        with torch.inference_mode():
            return self.actor.masked_logits(obs, masks).numpy()


__all__ = ["CriticValue", "CriticValueError", "PolicyPrior"]
