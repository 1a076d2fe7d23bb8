"""Batched training environment: ``N`` games in one `BatchState` as an SB3 `VecEnv`.

Each game has one learner seat (drawn from the env's generator at every game start); the
opponents act in batch inside `SkyjoVecEnv.step_wait` until every game is back at a learner
decision, and finished games restart at once (SB3's auto-reset convention). Works directly
with sb3-contrib's ``MaskablePPO``::

    venv = SkyjoVecEnv(num_envs=256, num_players=2, seed=0)
    model = MaskablePPO("MlpPolicy", venv)
    model.learn(1_000_000)

This is the one module of `skyjo_env` that imports Stable-Baselines3 (to subclass `VecEnv`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnv,
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

from skyjo_env.core import layout
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.learner_games import LearnerGames, Opponents, integer_actions, opponent_seed
from skyjo_env.learner_state import (
    DEFAULT_OPPONENT_KEY,
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


class SkyjoVecEnv(VecEnv):
    """``num_envs`` Skyjo games for one learner, stepped together (SB3 `VecEnv`).

    Observation: float32 (N, O), game ``i`` seen from its learner seat (the encoder of
    `skyjo_env.encoding`). Action: int64 (N,), each in ``0 .. A-1``; ``action_masks()``
    gives bool (N, A) (sb3-contrib's ``get_action_masks`` also works through
    ``env_method("action_masks")``).

    Reward: float32 (N,), identical to `skyjo_env.single_agent.SkyjoGymEnv` (the learner
    seat's reward of `skyjo_env.aec.SkyjoAECEnv`, summed over the opponents' moves):
    round end ``-(own round score - mean of the others') / 100``; at the game end
    (``episode="game"``, not truncated) ``+1/k`` to each of the ``k`` winners, ``-1/(P-k)``
    to the others; ``illegal_penalty`` for a penalised illegal action.

    Done: a game ended (``episode="game"``), a one-round game ended (``episode="round"``),
    the turn cap truncated it (``info["TimeLimit.truncated"] = True``), or an illegal action
    was penalised. The game then restarts at once: ``info["terminal_observation"]`` holds
    the last observation of the finished episode and the returned row is the first learner
    observation of the next one. Finished episodes also report ``info["episode_end"]``:
    ``{"learner_seat", "total_scores", "round_scores" (of the last scored round), "won",
    "truncated", "illegal"}`` (scores as lists of P ints in seat order).

    Seeding: ``seed(s)`` (or ``seed=s`` at construction) makes the next ``reset()`` deal game
    ``i`` from the int seed ``s + i``, the very game `skyjo_env.aec.SkyjoAECEnv`
    ``reset(seed=s + i)`` deals; it also seeds the env's generator (learner seats, opponent
    choosers) and the default random opponent. Later games continue from each finished game's
    own random stream, as the AEC env's ``reset()`` without a seed does.

    Opponents: one `Agent` for all opponent seats, a sequence of ``P-1`` agents (by seat
    after the learner), or a chooser ``f(rng) -> Agent | Sequence[Agent]`` called at every
    game start; change them with `set_opponents`. Default: a `RandomAgent`.

    State: `export_state` gives everything later steps depend on as a JSON-able dict and
    named arrays (opponents by name); `import_state` continues from it, checking it first.

    Failures: actions that are not an integer array of shape (N,) are refused in
    ``step_async`` (``ValueError``), an illegal learner action in ``step_wait``
    (``illegal_action="raise"``); neither changes anything. An opponent that raises or plays
    an illegal or malformed action leaves the games half-played: the error names the
    opponent, and every later step raises `EnvNeedsResetError` until ``reset()``.
    """

    def __init__(
        self,
        num_envs: int = 64,
        rules: SkyjoRules | None = None,
        opponents: Opponents | None = None,
        *,
        seed: int | None = None,
        **options: Any,
    ):
        """Build the env (call ``reset()`` before stepping, as SB3 does).

        Args:
            num_envs: Number of games ``N``.
            rules: The rules; when None, ``SkyjoRules(**rule fields)``.
            opponents: See the class docstring; default a `RandomAgent`.
            seed: Optional int, as `seed`.
            **options: `skyjo_env.options.EnvOptions` fields (``episode``,
                ``illegal_action``, ``illegal_penalty``: the learner's reward for an
                illegal action under ``"penalize"``, ``render_mode``: renders game 0) and
                `SkyjoRules` fields (or changes to ``rules``), as `EnvOptions.from_keywords`
                takes them.

        Raises:
            ValueError: A bad ``num_envs``, option, rules field or opponent.
        """
        if not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be an int >= 1, got {num_envs!r}")
        self.options = env_options = EnvOptions.from_keywords(rules, **options)
        self.rules = env_options.rules
        self.render_mode = env_options.render_mode
        self.episode = env_options.episode
        self._rng = np.random.default_rng(seed)
        self._default_opponent = RandomAgent(
            np.random.default_rng(None if seed is None else opponent_seed(seed))
        )
        self._owns_opponent = opponents is None
        self.games = LearnerGames(
            env_options,
            int(num_envs),
            self._default_opponent if opponents is None else opponents,
            rng=self._rng,
        )
        super().__init__(
            int(num_envs), env_options.observation_space(), spaces.Discrete(self.games.num_actions)
        )
        self.metadata = {"render_modes": list(RENDER_MODES), "name": "skyjo_vec_v0"}
        self._actions: np.ndarray | None = None
        self._started = False
        if seed is not None:
            self.seed(seed)

    # -------------------------------------------------------------- seeding / opponents

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """Seed the next ``reset()``: game ``i`` from ``seed + i`` (see the class docstring).

        Returns:
            The game seeds the next reset will use (None entries when ``seed`` is None).
        """
        if seed is None:
            self._seeds = [None] * self.num_envs
            return self._seeds
        self._rng = np.random.default_rng(seed)
        if self._owns_opponent:
            self._default_opponent.rng = np.random.default_rng(opponent_seed(seed))
        self._seeds = [int(seed) + i for i in range(self.num_envs)]
        return self._seeds

    def set_opponents(self, opponents: Opponents) -> None:
        """Swap the opponents (an agent, ``P-1`` agents, or a chooser), effective at once."""
        self.games.set_opponents(opponents, self._rng)
        self._owns_opponent = False  # only once the new opponents are in place

    # -------------------------------------------------------------- state export / import

    def export_state(self, agent_key: Callable[[Agent], str] | None = None
                     ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Everything this env's future steps depend on, as plain data (no pickles).

        The games (`learner_state.export_games`), the env's generator, the pending reset
        seeds, whether ``reset()`` has run, and the default random opponent's generator.
        The other opponent agents are only named (their own state is the caller's to save),
        and a chooser is not data: `import_state` needs an env with the same one.

        Args:
            agent_key: Names each opponent agent in use (distinct agents, distinct names);
                may be None when the only opponent is the env's default random one (which
                is named `DEFAULT_OPPONENT_KEY`).

        Returns:
            ``(meta, arrays)``: a JSON-able dict and named numpy arrays (copies).

        Raises:
            RuntimeError: Called between ``step_async`` and ``step_wait``.
            ValueError: An opponent to name without ``agent_key``, or ``agent_key`` gave a
                name twice, a non-string or `DEFAULT_OPPONENT_KEY`.
        """
        if self._actions is not None:
            raise RuntimeError("export_state between step_async and step_wait: call "
                               "step_wait first")
        default = self._default_opponent
        games_meta, arrays = export_games(self.games, exported_opponent_key(default, agent_key))
        meta = {
            "games": games_meta,
            "rng": self._rng.bit_generator.state,
            "seeds": list(self._seeds),
            "started": self._started,
            "owns_opponent": self._owns_opponent,
            "default_opponent_rng": default.rng.bit_generator.state,
        }
        return meta, arrays

    def import_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray],
                     agent_for_key: Callable[[str], Agent] | None = None) -> None:
        """Continue from an `export_state` of an env built with the same settings.

        Everything is checked before anything changes: a refused state leaves this env as
        it was. Stepping then goes on exactly as the exported env would have (given the
        same opponents in the same state, and the same chooser if it had one).

        Args:
            meta: The JSON part of `export_state` (may have been through ``json``).
            arrays: Its arrays by name.
            agent_for_key: Returns the agent for each opponent name other than
                `DEFAULT_OPPONENT_KEY` (None when there is no other).

        Raises:
            ValueError: One line naming the bad entry or array (see
                `learner_state.import_games`) or generator state.
        """
        require_meta_entries(meta, ("games", "rng", "seeds", "default_opponent_rng"),
                             flags=("started", "owns_opponent"))
        rng = generator_from_state(meta["rng"], "rng")
        opponent_rng = generator_from_state(meta["default_opponent_rng"], "default_opponent_rng")
        seeds = meta["seeds"]
        if not (isinstance(seeds, list) and len(seeds) == self.num_envs
                and (all(s is None for s in seeds) or all(_is_seed(s) for s in seeds))):
            raise ValueError(f"state meta 'seeds' must be {self.num_envs} ints >= 0 or "
                             f"{self.num_envs} Nones, got {seeds!r}")
        default = self._default_opponent
        import_games(self.games, meta["games"], arrays,
                     imported_opponent_agent(default, agent_for_key))
        self._rng = rng
        default.rng = opponent_rng
        self._seeds = list(seeds)
        self._started = meta["started"]
        self._owns_opponent = meta["owns_opponent"]

    @property
    def learner_seat(self) -> np.ndarray:
        """int64 (N,) the learner's seat in each game (a copy)."""
        return self.games.learner_seat.copy()

    # -------------------------------------------------------------- VecEnv API

    def reset(self) -> VecEnvObs:
        """Start all ``N`` games (seeded by `seed`, else from each game's own stream).

        Returns:
            float32 (N, O) first learner observations.
        """
        games = self.games
        which = np.arange(self.num_envs, dtype=np.int64)
        if self._seeds[0] is not None:
            seeds = list(self._seeds)
        elif self._started:
            seeds = games.next_game_streams(which)
        else:
            seeds = [int(s) for s in self._rng.integers(2**63, size=self.num_envs)]
        seats = self._rng.integers(self.rules.num_players, size=self.num_envs)
        games.start(which, seeds, seats, self._rng)
        # consumed only now: a reset that failed (an opponent raised) can be retried as is
        self._reset_seeds()
        self._reset_options()
        self._started = True
        self.reset_infos = [{"learner_seat": int(s)} for s in seats]
        return games.observe()

    def step_async(self, actions: np.ndarray) -> None:
        """Store the learner's actions, int (N,), for `step_wait`.

        Raises:
            ValueError: ``actions`` are not an integer array of shape (N,) (floats and
                bools included); nothing is stored.
        """
        self._actions = None  # a refused call must not leave earlier actions to play
        self._actions = integer_actions(actions, (self.num_envs,), "SkyjoVecEnv actions")

    def step_wait(self) -> VecEnvStepReturn:
        """Play the stored actions, the opponents' replies, and restart finished games.

        Returns:
            ``(observations float32 (N, O), rewards float32 (N,), dones bool (N,), infos)``.

        Raises:
            IllegalActionError: An illegal learner action under ``illegal_action="raise"``
                (nothing changes), or an opponent's illegal action.
            OpponentError: An opponent agent raised (named in the message); as with an
                opponent's illegal or malformed actions, the games are then half-played
                and every later step raises `EnvNeedsResetError` until ``reset()``.
        """
        actions, self._actions = self._actions, None
        if actions is None:
            raise RuntimeError("step_async must be called before step_wait")
        games = self.games
        games.check_usable()
        if not self._started:
            raise RuntimeError("call reset() before stepping")
        games.advance(actions)
        observations = games.observe()
        rewards = games.rewards.astype(np.float32)
        games.rewards[:] = 0.0
        dones = games.over.copy()
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if dones.any():
            which = np.flatnonzero(dones)
            totals = games.batch.total_scores
            round_scores = games.batch.seat[:, :, layout.ROUND_SCORE]
            game_over = games.batch.game_over
            for b in which:
                seat = int(games.learner_seat[b])
                truncated = bool(games.truncated[b])
                illegal = not truncated and not game_over[b]
                info = infos[b]
                info["terminal_observation"] = observations[b].copy()
                info["TimeLimit.truncated"] = truncated
                info["episode_end"] = {
                    "learner_seat": seat,
                    "total_scores": [int(t) for t in totals[b]],
                    "round_scores": [int(r) for r in round_scores[b]],
                    "won": bool(
                        not truncated and not illegal and totals[b, seat] == totals[b].min()
                    ),
                    "truncated": truncated,
                    "illegal": illegal,
                }
            streams = games.next_game_streams(which)
            seats = self._rng.integers(self.rules.num_players, size=which.size)
            games.start(which, streams, seats, self._rng)
            games.observe(observations, which)
        return observations, rewards, dones, infos

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions in every game: bool (N, A) (a copy)."""
        return self.games.masks.copy()

    def close(self) -> None:
        """Nothing to release."""

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """``getattr(self, attr_name)`` once per selected game (all games share this env)."""
        value = getattr(self, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """``setattr(self, attr_name, value)`` (one object holds every game)."""
        setattr(self, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """Call a method per selected game.

        ``"action_masks"`` returns one bool (A,) row per game (what sb3-contrib's
        ``get_action_masks`` stacks); any other method is called once on this env and its
        result repeated per game.
        """
        selected = list(self._get_indices(indices))
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in selected]
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in selected]

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """No game is wrapped in a Gymnasium wrapper: all False."""
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """No image rendering: None per game."""
        return [None for _ in range(self.num_envs)]

    def render(self, mode: str | None = None) -> str | None:
        """Game 0 as text (``"ansi"`` returns it, ``"human"`` prints it)."""
        mode = mode or self.render_mode
        if mode is None:
            return None
        text = render_ansi(self.games.batch, 0) + f"\nlearner: seat {int(self.games.learner_seat[0])}"
        if mode == "human":
            print(text)
            return None
        return text


def _is_seed(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


__all__ = ["DEFAULT_OPPONENT_KEY", "SkyjoVecEnv"]
