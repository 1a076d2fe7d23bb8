"""The single-agent Gymnasium view: one learner seat, opponents played inside ``step``.

`SkyjoGymEnv` is a view over a `skyjo_env.learner_games.LearnerGames` of one game. It needs
Gymnasium only (no PettingZoo).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from skyjo_env.core.actions import Phase
from skyjo_env.core.layout import PHASE, ROUND_SCORE
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.learner_games import LearnerGames, Opponents, opponent_seed
from skyjo_env.protocol import RandomAgent
from skyjo_env.render import render_ansi
from skyjo_env.view_options import observation_box, resolve_rules

_GAME_OVER = int(Phase.GAME_OVER)


class SkyjoGymEnv(gymnasium.Env):
    """Skyjo for one learner (Gymnasium API); the other seats are played by opponent agents.

    At every reset the learner is put in a random seat (drawn from the env's own generator,
    ``np_random``); the opponents then act inside ``reset``/``step`` until it is the
    learner's turn again or the episode ends, so every observation and reward is the
    learner's own.

    Observation: float32 (O,), the learner seat's vector from
    `skyjo_env.encoding.ObservationEncoder` (bounds from `skyjo_env.encoding.observation_bounds`).

    Action: int in ``0 .. A-1`` (``A = 2S + 3``); ``action_masks()`` -> bool (A,) gives the
    legal ones (sb3-contrib's MaskablePPO calls it).

    Reward (float): exactly the learner seat's reward of `skyjo_env.aec.SkyjoAECEnv`, summed
    over the learner's step and the opponents' moves that follow it:
        - round end: ``-(own round score - mean of the others' round scores) / 100``;
        - game end (``episode="game"``, not truncated): ``+1/k`` if among the ``k`` seats
          with the lowest total, else ``-1/(P-k)`` (0 if all seats tie);
        - an illegal action under ``illegal_action="penalize"``: ``illegal_penalty``.

    Episode end: ``terminated`` at the game end (``episode="game"``), at the end of a
    one-round game (``episode="round"``), or on a penalised illegal action; ``truncated``
    when the engine's turn cap stops the game. With ``illegal_action="raise"`` (default) an
    illegal action raises the engine's `IllegalActionError` and nothing changes. The
    Gymnasium and SB3 checkers sample unmasked actions, so they run with ``"penalize"``.

    ``info``: ``{"learner_seat": int}`` and, at the end of an episode that was not ended by
    an illegal action, ``"total_scores"`` and ``"round_scores"`` (of the last scored round;
    lists of P ints in seat order) and ``"won"`` (bool).

    Seeding: ``reset(seed=s)`` deals the game the engine deals from the int seed ``s`` (as the
    AEC env's ``reset(seed=s)``), seeds ``np_random`` (which picks the learner seat) with
    ``s``, and re-seeds the default random opponent from ``s``; opponents passed in keep
    their own generators. ``reset()`` without a seed draws the next game seed from
    ``np_random``.
    """

    metadata = {"render_modes": ["ansi", "human"], "name": "skyjo_single_agent_v0"}

    def __init__(
        self,
        rules: SkyjoRules | None = None,
        opponents: Opponents | None = None,
        episode: str = "game",
        illegal_action: str = "raise",
        illegal_penalty: float = -1.0,
        render_mode: str | None = None,
        **rule_kwargs: Any,
    ):
        """Build the env.

        Args:
            rules: The rules; when None, ``SkyjoRules(**rule_kwargs)``.
            opponents: See `LearnerGames.set_opponents`; default a `RandomAgent`.
            episode: ``"game"`` (default) or ``"round"``.
            illegal_action: ``"raise"`` (default) or ``"penalize"``.
            illegal_penalty: The learner's reward for an illegal action under ``"penalize"``.
            render_mode: None, ``"ansi"`` or ``"human"``.
            **rule_kwargs: `SkyjoRules` fields (or changes to ``rules``).
        """
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode={render_mode!r} is invalid: allowed None, 'ansi', 'human'")
        self.rules = resolve_rules(rules, rule_kwargs)
        self.render_mode = render_mode
        self._default_opponent = RandomAgent(np.random.default_rng(), name="random")
        self._owns_opponent = opponents is None
        self.games = LearnerGames(
            self.rules,
            1,
            self._default_opponent if opponents is None else opponents,
            episode=episode,
            illegal_action=illegal_action,
            illegal_penalty=illegal_penalty,
            rng=self.np_random,
        )
        self.episode = episode
        self.observation_space = observation_box(self.rules)
        self.action_space = spaces.Discrete(self.games.num_actions)
        self._obs = np.empty((1, self.games.obs_size), np.float32)
        self._action = np.zeros(1, np.int64)
        self._which = np.zeros(1, np.int64)

    @property
    def learner_seat(self) -> int:
        """The learner's seat in the current game."""
        return int(self.games.learner_seat[0])

    def set_opponents(self, opponents: Opponents) -> None:
        """Change the opponents from their next decision on (see `LearnerGames.set_opponents`)."""
        self._owns_opponent = False
        self.games.set_opponents(opponents, self.np_random)

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a new game: deal, pick the learner seat, play opponents up to its turn.

        Args:
            seed: A non-negative int game seed (see the class docstring), or None.
            options: Accepted for API compatibility; unused.

        Returns:
            ``(observation float32 (O,), info)``.
        """
        super().reset(seed=seed)
        if seed is None:
            game_seed = int(self.np_random.integers(2**63))
        else:
            game_seed = seed
            if self._owns_opponent:
                self._default_opponent.rng = np.random.default_rng(opponent_seed(seed))
        seat = self.np_random.integers(self.rules.num_players, size=1)
        self.games.start(self._which, [game_seed], seat, self.np_random)
        return self._observation(), {"learner_seat": self.learner_seat}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Play the learner's action and the opponents' replies.

        Returns:
            ``(observation float32 (O,), reward, terminated, truncated, info)``.

        Raises:
            IllegalActionError: Illegal action under ``illegal_action="raise"``.
            RuntimeError: Stepping an episode that has ended.
        """
        games = self.games
        if games.over[0]:
            raise RuntimeError("the episode has ended: call reset() before step()")
        self._action[0] = action
        games.advance(self._action)
        reward = float(games.rewards[0])
        games.rewards[0] = 0.0
        terminated = bool(games.terminated[0])
        truncated = bool(games.truncated[0])
        info: dict[str, Any] = {"learner_seat": self.learner_seat}
        if (terminated or truncated) and games.batch.game[0, PHASE] == _GAME_OVER:
            totals = games.batch.total_scores[0]
            info["total_scores"] = [int(t) for t in totals]
            info["round_scores"] = [int(r) for r in games.batch.seat[0, :, ROUND_SCORE]]
            info["won"] = bool(totals[self.learner_seat] == totals.min()) and not truncated
        return self._observation(), reward, terminated, truncated, info

    def _observation(self) -> np.ndarray:
        return self.games.observe(self._obs)[0].copy()

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions now: bool (A,) (all False once the episode ended)."""
        return self.games.masks[0].copy()

    def render(self) -> str | None:
        """The game as text (``render_mode="ansi"``) or printed (``"human"``)."""
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render method without specifying any render mode.")
            return None
        text = render_ansi(self.games.batch, 0) + f"\nlearner: seat {self.learner_seat}"
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release; safe to call more than once."""


__all__ = ["SkyjoGymEnv"]
