"""The single-agent Gymnasium view: one learner seat, opponents played inside ``step``.

`SkyjoGymEnv` is a view over a `skyjo_env.learner_games.LearnerGames` of one game. It needs
Gymnasium only (no PettingZoo).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from skyjo_env.core import layout
from skyjo_env.core.actions import Phase
from skyjo_env.core.engine import IllegalActionError, illegal_action_message
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.learner_games import LearnerGames, Opponents, opponent_seed
from skyjo_env.learner_state import (
    export_games,
    exported_opponent_key,
    generator_from_state,
    import_games,
    imported_opponent_agent,
    require_meta_entries,
)
from skyjo_env.options import RENDER_MODES, EnvOptions
from skyjo_env.protocol import Agent, RandomAgent
from skyjo_env.render import render_ansi

_GAME_OVER = int(Phase.GAME_OVER)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def action_id(action: Any) -> int:
    """``action`` as a Python int, if it is one action id.

    Accepts a Python int and a NumPy integer scalar or 0-d integer array (SB3 hands
    ``np.int64``; ``model.predict`` on one observation returns a 0-d array): what
    `operator.index` takes, as the AEC env's ``step`` does. Bools (``True`` is an int to
    Python), floats (even ``3.0``), strings, None and arrays with a dimension (even
    ``np.array([3])``, a batch of one action, as for the VecEnv) are refused rather than
    cast: a cast would hide a bug.

    Raises:
        TypeError: Not an integer; the message shows what was received.
        ValueError: An integer array with one or more dimensions.
    """
    if type(action) is int:  # the common case first
        return action
    if isinstance(action, (bool, np.bool_)):
        raise TypeError(f"action must be an int action id, got the bool {action!r}")
    if isinstance(action, np.integer):
        return int(action)
    if isinstance(action, np.ndarray):
        if action.dtype.kind not in "iu":
            raise TypeError(
                f"action must be an int action id, got an array of dtype {action.dtype}"
            )
        if action.ndim != 0:
            raise ValueError(
                f"action must be one int action id (a 0-d array at most), got an array of "
                f"shape {action.shape}"
            )
        return int(action)
    if isinstance(action, int):  # an int subclass such as an IntEnum member
        return int(action)
    raise TypeError(f"action must be an int action id, got {type(action).__name__} {action!r}")


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
    An action that is not one int id (a bool, a float, a string, ...) raises
    ``TypeError``/``ValueError`` and nothing changes. An opponent that raises or plays an
    illegal or malformed action inside ``reset``/``step`` leaves the game half-played: the
    error names the opponent, and ``step`` refuses (`EnvNeedsResetError`) until ``reset()``.

    ``info``: ``{"learner_seat": int}`` and, at the end of an episode that was not ended by
    an illegal action, ``"total_scores"`` and ``"round_scores"`` (of the last scored round;
    lists of P ints in seat order) and ``"won"`` (bool).

    Seeding: ``reset(seed=s)`` deals the game the engine deals from the int seed ``s`` (as the
    AEC env's ``reset(seed=s)``), seeds ``np_random`` (which picks the learner seat) with
    ``s``, and re-seeds the default random opponent from ``s``; opponents passed in keep
    their own generators. ``reset()`` without a seed draws the next game seed from
    ``np_random``.
    """

    metadata = {"render_modes": list(RENDER_MODES), "name": "skyjo_single_agent_v0"}

    def __init__(
        self,
        rules: SkyjoRules | None = None,
        opponents: Opponents | None = None,
        **options: Any,
    ):
        """Build the env.

        Args:
            rules: The rules; when None, ``SkyjoRules(**rule fields)``.
            opponents: See `LearnerGames.set_opponents`; default a `RandomAgent`.
            **options: `skyjo_env.options.EnvOptions` fields (``episode``,
                ``illegal_action``, ``illegal_penalty``: the learner's reward for an
                illegal action under ``"penalize"``, ``render_mode``) and `SkyjoRules`
                fields (or changes to ``rules``), as `EnvOptions.from_keywords` takes them.

        Raises:
            ValueError: A bad option, rules field or opponent.
        """
        super().__init__()
        self.options = env_options = EnvOptions.from_keywords(rules, **options)
        self.rules = env_options.rules
        self.render_mode = env_options.render_mode
        self._default_opponent = RandomAgent(np.random.default_rng(), name="random")
        self._owns_opponent = opponents is None
        self.games = LearnerGames(
            env_options,
            1,
            self._default_opponent if opponents is None else opponents,
            rng=self.np_random,
        )
        self.episode = env_options.episode
        self.observation_space = env_options.observation_space()
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
        self.games.set_opponents(opponents, self.np_random)
        self._owns_opponent = False  # only once the new opponents are in place

    def export_state(self, agent_key: Callable[[Agent], str] | None = None
                     ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Everything this env's future depends on, as plain data (no pickles): to save a
        game and continue it later, or to try moves from one position.

        The game (`learner_state.export_games`), ``np_random`` (the next game seeds and
        learner seats) and the default random opponent's generator. Other opponent agents
        are only named (their own state is the caller's to save), and a chooser is not
        data: `import_state` needs an env with the same one.

        Args:
            agent_key: Names each opponent agent in use (distinct agents, distinct names);
                may be None when the only opponent is the env's default random one.

        Returns:
            ``(meta, arrays)``: a JSON-able dict and named numpy arrays (copies).

        Raises:
            ValueError: An opponent to name without ``agent_key``, or ``agent_key`` gave a
                name twice, a non-string or the default opponent's reserved name.
        """
        default = self._default_opponent
        games_meta, arrays = export_games(self.games, exported_opponent_key(default, agent_key))
        meta = {
            "games": games_meta,
            "np_random": self.np_random.bit_generator.state,
            "owns_opponent": self._owns_opponent,
            "default_opponent_rng": default.rng.bit_generator.state,
        }
        return meta, arrays

    def import_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray],
                     agent_for_key: Callable[[str], Agent] | None = None) -> None:
        """Continue from an `export_state` of an env built with the same settings.

        Everything is checked before anything changes: a refused state leaves this env as
        it was. Stepping (and resetting) then goes on exactly as the exported env would
        have, given the same opponents in the same state.

        Args:
            meta: The JSON part of `export_state` (may have been through ``json``).
            arrays: Its arrays by name.
            agent_for_key: Returns the agent for each opponent name other than the default
                random opponent's (None when there is no other).

        Raises:
            ValueError: One line naming the bad entry or array (see
                `learner_state.import_games`) or generator state.
        """
        require_meta_entries(meta, ("games", "np_random", "default_opponent_rng"),
                             flags=("owns_opponent",))
        np_random = generator_from_state(meta["np_random"], "np_random")
        opponent_rng = generator_from_state(meta["default_opponent_rng"], "default_opponent_rng")
        default = self._default_opponent
        import_games(self.games, meta["games"], arrays,
                     imported_opponent_agent(default, agent_for_key))
        self.np_random = np_random
        default.rng = opponent_rng
        self._owns_opponent = meta["owns_opponent"]

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
            IllegalActionError: Illegal action under ``illegal_action="raise"`` (nothing
                changes), or an opponent's illegal action.
            TypeError, ValueError: ``action`` is not one int action id (see `action_id`;
                nothing changes).
            OpponentError: An opponent agent raised (named in the message).
            EnvNeedsResetError: An earlier step or reset failed part-way (an opponent's
                error): the game is half-played until ``reset()``.
            RuntimeError: Stepping an episode that has ended.
        """
        games = self.games
        games.check_usable()
        if games.over[0]:
            raise RuntimeError("the episode has ended: call reset() before step()")
        action = action_id(action)
        if not _INT64_MIN <= action <= _INT64_MAX:  # no int64 holds it; illegal anyway
            if games.illegal_action == "raise":
                raise IllegalActionError(illegal_action_message(games.batch, 0, action))
            action = games.num_actions  # an id just as illegal, that int64 holds
        self._action[0] = action
        games.advance(self._action)
        reward = float(games.rewards[0])
        games.rewards[0] = 0.0
        terminated = bool(games.terminated[0])
        truncated = bool(games.truncated[0])
        info: dict[str, Any] = {"learner_seat": self.learner_seat}
        if (terminated or truncated) and games.batch.game[0, layout.PHASE] == _GAME_OVER:
            totals = games.batch.total_scores[0]
            info["total_scores"] = [int(t) for t in totals]
            info["round_scores"] = [int(r) for r in games.batch.seat[0, :, layout.ROUND_SCORE]]
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


__all__ = ["SkyjoGymEnv", "action_id"]
