"""PettingZoo AEC environment over the rules engine.

`env()` returns the wrapped environment (`OrderEnforcingWrapper` over
`AssertOutOfBoundsWrapper` over `SkyjoAECEnv`); `raw_env()` the bare one. Both build their
`SkyjoRules` from keyword arguments when no ``rules`` are given::

    from skyjo_env import env
    game = env(num_players=3)
    game.reset(seed=7)
    for agent in game.agent_iter():
        observation, reward, termination, truncation, info = game.last()
        action = None if termination or truncation else my_policy(observation)
        game.step(action)

Rewards come from `skyjo_env.rewards`, the one definition every view shares.
"""

from __future__ import annotations

import operator
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers.order_enforcing import (
    AECOrderEnforcingIterable,
    AECOrderEnforcingIterator,
)

from skyjo_env.core import kernels, layout
from skyjo_env.core.actions import num_actions
from skyjo_env.core.engine import (
    IllegalActionError,
    illegal_action_message,
    new_batch,
    reset,
    step,
)
from skyjo_env.core.jit import JIT_DISABLED, jit, quiet_overflow
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationEncoder, encode_into, view_arguments
from skyjo_env.options import RENDER_MODES, EnvOptions
from skyjo_env.render import render_ansi
from skyjo_env.rewards import seat_rewards_into

# ---------------------------------------------------------------- the AEC env


@jit
def observe_into(observer, grid, slot_state, discard_pile, game, seat, params, card_values,
                 card_counts, table, value_scale, deck_size, target_score, unseen, legal,
                 observation, action_mask):
    """Observation and action mask of seat ``observer`` in game 0, in one compiled call.

    Writes the encoder's vector into ``observation`` (float32 (O,)) and, when ``observer``
    is the seat to act, the legal-action mask into ``legal`` (bool (1, A)) and as 0/1 into
    ``action_mask`` (int8 (A,)); zeros otherwise. Returns True when ``legal`` was written.
    """
    encode_into(0, observer, grid, slot_state, discard_pile, game, seat, card_values,
                card_counts, table, value_scale, deck_size, target_score, unseen, observation)
    if game[0, layout.CURRENT] != observer:
        action_mask[:] = 0
        return False
    kernels.legal_mask_into(0, slot_state, game, params, legal[0])
    for a in range(action_mask.shape[0]):
        action_mask[a] = 1 if legal[0, a] else 0
    return True



class SkyjoAECEnv(AECEnv):
    """Skyjo as a PettingZoo AEC environment: one game, seats take turns as in the engine.

    Agents are ``"player_0" .. "player_{P-1}"`` (seat order); ``agent_selection`` is always the
    seat the engine says is to act. Every decision of a turn is a separate step (draw, then
    place; or draw, discard, reveal), and the initial reveals are steps too.

    Observation (``observe(agent)``), a dict:
        - ``"observation"``: float32 (O,), what that seat may know, from
          `skyjo_env.encoding.ObservationEncoder` (own grid first, opponents in relative
          seat order; no face-down value and no draw-pile order enters it).
        - ``"action_mask"``: int8 (A,), 1 where the action is legal. All zeros for a seat
          that is not to act (and after the game ended).

    Action: int in ``0 .. A-1`` with ``A = 2S + 3`` (27 for 3x4 grids), see
    `skyjo_env.core.actions`. Legality comes only from the engine's legal-action mask.

    Rewards (float, in ``rewards`` for the step that caused them, summed per agent in
    ``_cumulative_rewards`` until that agent acts, as PettingZoo requires):
        - Round end: every seat gets ``-(own round score - mean of the other seats' round
          scores) / 100`` (round scores include the finisher penalty). Scoring lower than
          the others is positive; the round rewards sum to zero.
        - Game end (``episode="game"`` only, not on truncation): additionally the ``k``
          seats with the lowest total (the winners) get ``+1/k`` each and the others
          ``-1/(P-k)`` each; a tie of all seats gives 0. This sums to zero too.
        - Truncation (``max_turns_per_round`` reached): the round is not scored, no reward.
        - Illegal action with ``illegal_action="penalize"``: the offender gets
          ``illegal_penalty``, the others 0.
        - Every other step: 0.

    Episode end:
        - ``episode="game"``: the game ends (a total reached ``target_score``, or
          ``max_rounds``): ``terminations`` all True.
        - ``episode="round"``: each episode is a one-round game (the engine runs with
          ``max_rounds=1``, from a fresh deal): ``terminations`` all True at the round end,
          with only the round reward.
        - The turn cap truncates the game: ``truncations`` all True.
        - ``illegal_action="penalize"``: an illegal action ends the episode for everyone
          (``terminations`` all True; ``infos[offender]["illegal_action"]`` holds the
          engine's message). With ``"raise"`` (default) the engine's `IllegalActionError`
          propagates and nothing changes. PettingZoo's ``api_test`` samples with the action
          mask, so it runs in either mode.

    Seeding: ``reset(seed=s)`` deals the game the engine deals from the int seed ``s`` (the
    same game as batch game ``i`` of the VecEnv seeded with ``s - i``); ``reset()`` without a
    seed starts the next game from the previous game's own random stream (deterministic),
    or, on the very first reset, from fresh OS entropy.

    Attributes:
        options: The `skyjo_env.options.EnvOptions` it was built with; ``rules``,
            ``episode``, ``illegal_action``, ``illegal_penalty`` and ``render_mode`` are its
            fields.
        rules: The rules as given; ``batch.rules`` are those the engine runs (see
            `EnvOptions.engine_rules`).
        batch: The engine state, a batch of one game.
        encoder: The observation encoder.
    """

    metadata = {"render_modes": list(RENDER_MODES), "name": "skyjo_v0", "is_parallelizable": False}

    def __init__(self, rules: SkyjoRules | None = None, **options: Any):
        """Build the env.

        Args:
            rules: The rules; when None, ``SkyjoRules(**rule fields)``.
            **options: `skyjo_env.options.EnvOptions` fields (``episode``,
                ``illegal_action``, ``illegal_penalty``, ``render_mode``) and `SkyjoRules`
                fields (or changes to ``rules``), as `EnvOptions.from_keywords` takes them.

        Raises:
            ValueError: A bad option or rules field.
        """
        super().__init__()
        self.options = env_options = EnvOptions.from_keywords(rules, **options)
        self.rules = env_options.rules
        self.episode = env_options.episode
        self.illegal_action = env_options.illegal_action
        self.illegal_penalty = env_options.illegal_penalty
        self.render_mode = env_options.render_mode
        self._game_bonus = env_options.game_bonus
        self._penalize = env_options.penalize

        run_rules = env_options.engine_rules
        self.batch = new_batch(run_rules, 1)
        self.encoder = ObservationEncoder(run_rules)
        players = self.rules.num_players
        self.possible_agents = [f"player_{p}" for p in range(players)]
        self._seat_of = {agent: p for p, agent in enumerate(self.possible_agents)}
        self._num_actions = num_actions(self.rules.num_slots)
        box = env_options.observation_space()
        self.observation_spaces = {
            agent: spaces.Dict(
                {
                    "observation": spaces.Box(box.low, box.high, dtype=np.float32),
                    "action_mask": spaces.Box(0, 1, (self._num_actions,), dtype=np.int8),
                }
            )
            for agent in self.possible_agents
        }
        self.action_spaces = {
            agent: spaces.Discrete(self._num_actions) for agent in self.possible_agents
        }

        # preallocated buffers: the hot path allocates only the returned observation
        batch = self.batch
        self._actions = np.full(1, -1, np.int64)
        self._events = np.zeros(1, np.int32)
        self._game_zero = np.zeros(1, np.int64)
        self._mask = np.zeros((1, self._num_actions), np.bool_)
        self._mask_fresh = False
        self._seat_rewards = np.zeros(players, np.float64)
        self._rewards_dirty = False
        self._started = False
        self._ended = False
        # arguments of the compiled observer, in its order
        self._obs_size = self.encoder.size
        self._observe_args = view_arguments(batch, self.encoder)
        self._step_args = (*batch.arrays, self._actions, self._events)

    # -------------------------------------------------------------- spaces

    def observation_space(self, agent: str) -> spaces.Dict:
        """The observation space of ``agent`` (the same object on every call)."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        """The action space of ``agent``: ``Discrete(2S + 3)``."""
        return self.action_spaces[agent]

    # -------------------------------------------------------------- reset / observe

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Start a new game.

        Args:
            seed: A non-negative int: deal the game the engine deals from it. None: continue
                from the previous game's random stream (fresh entropy on the first reset).
            options: Accepted for API compatibility; unused.
        """
        if seed is None and self._started:
            # the next game continues the previous game's own random stream
            with quiet_overflow():
                stream = np.array([kernels.next_random(self.batch.rng, 0)], np.uint64)
                kernels.start_games(*self.batch.arrays, self._game_zero, stream, self.batch.deck[:0])
        else:
            if seed is None:
                seed = int(np.random.SeedSequence().generate_state(1, np.uint64)[0])
            reset(self.batch, [seed])
        self._started = True
        self.agents = self.possible_agents[:]
        self.rewards = {agent: 0.0 for agent in self.agents}
        self._cumulative_rewards = {agent: 0.0 for agent in self.agents}
        self.terminations = {agent: False for agent in self.agents}
        self.truncations = {agent: False for agent in self.agents}
        self.infos = {agent: {} for agent in self.agents}
        self._rewards_dirty = False
        self._mask_fresh = False
        self._ended = False
        self.agent_selection = self.agents[int(self.batch.game[0, layout.CURRENT])]

    def _legal_mask(self) -> np.ndarray:
        if not self._mask_fresh:
            batch = self.batch
            kernels.legal_masks(batch.slot_state, batch.game, batch.params, self._mask)
            self._mask_fresh = True
        return self._mask[0]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """What ``agent`` may know now.

        Returns:
            ``{"observation": float32 (O,), "action_mask": int8 (A,)}``, new arrays.
        """
        observation = np.empty(self._obs_size, np.float32)
        mask = np.empty(self._num_actions, np.int8)
        if observe_into(
            self._seat_of[agent],
            *self._observe_args,
            self._mask,
            observation,
            mask,
        ):
            self._mask_fresh = True
            if self._ended:  # by a penalised illegal action: the engine's game goes on
                mask.fill(0)
        return {"observation": observation, "action_mask": mask}

    def action_mask(self) -> np.ndarray:
        """Legal actions of the seat to act: bool (A,) (a copy; all False once over)."""
        if self._ended:
            return np.zeros(self._num_actions, np.bool_)
        return self._legal_mask().copy()

    # -------------------------------------------------------------- step

    def step(self, action: int | None) -> None:
        """Apply ``agent_selection``'s action (None for an agent that is done).

        Raises:
            IllegalActionError: The action is not legal (``illegal_action="raise"``).
            ValueError: None for an agent that is still playing, or a non-None action for
                one that is done.
            TypeError: The action is not an integer (a bool is not one).
        """
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if action is None:
            raise ValueError(f"{agent} is to act: None is only valid for an agent that is done")
        if action is True or action is False:  # an int to Python, never an action id
            raise TypeError(f"action must be an int action id, got the bool {action!r}")
        action = operator.index(action)
        self._cumulative_rewards[agent] = 0.0
        if self._rewards_dirty:
            for name in self.rewards:
                self.rewards[name] = 0.0
            self._rewards_dirty = False
        if not 0 <= action < self._num_actions or (
            self._penalize and not self._legal_mask()[action]
        ):
            message = illegal_action_message(self.batch, 0, action)
            if not self._penalize:
                raise IllegalActionError(message)
            self._end_by_illegal_action(agent, message)
            return
        self._actions[0] = action
        if JIT_DISABLED:
            step(self.batch, self._actions, self._events)
        elif kernels.step_batch(*self._step_args) >= 0:  # engine.step minus its argument checks
            raise IllegalActionError(illegal_action_message(self.batch, 0, action))
        self._mask_fresh = False
        event = self._events.item(0)
        if event:
            self._on_events(event)
        self.agent_selection = self.possible_agents[self.batch.game.item(layout.CURRENT)]

    def _on_events(self, event: int) -> None:
        if seat_rewards_into(event, self.batch.seat, 0, self._game_bonus, self._seat_rewards):
            for p, name in enumerate(self.possible_agents):
                reward = float(self._seat_rewards[p])
                self.rewards[name] = reward
                self._cumulative_rewards[name] += reward
            self._rewards_dirty = True
        if event & layout.EVENT_GAME_ENDED:
            done = self.truncations if event & layout.EVENT_TRUNCATED else self.terminations
            for name in self.agents:
                done[name] = True

    def _end_by_illegal_action(self, agent: str, message: str) -> None:
        self._ended = True
        for name in self.agents:
            self.terminations[name] = True
        self.rewards[agent] = self.illegal_penalty
        self._cumulative_rewards[agent] += self.illegal_penalty
        self._rewards_dirty = True
        self.infos[agent] = {"illegal_action": message}

    # -------------------------------------------------------------- render / close

    def render(self) -> str | None:
        """The game as text (``render_mode="ansi"``) or printed (``"human"``)."""
        if self.render_mode is None:
            gymnasium.logger.warn(
                "You are calling render method without specifying any render mode."
            )
            return None
        text = render_ansi(self.batch, 0, self.batch.rules)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release; safe to call more than once."""


def raw_env(rules: SkyjoRules | None = None, **options: Any) -> SkyjoAECEnv:
    """The bare `SkyjoAECEnv` (see its docstring for every argument)."""
    return SkyjoAECEnv(rules, **options)


# Why subclasses that touch PettingZoo's private wrapper state (``_has_reset``,
# ``_has_updated``, the order-enforcing iterator) rather than the plain wrappers: speed.
# The plain ``OrderEnforcingWrapper(AssertOutOfBoundsWrapper(raw))`` runs several times
# slower, below the 40,000 decisions/s target, and both fast paths matter
# (benchmarks/aec_wrappers.py; the figures are in docs/results.md).
# tests/envs/test_aec.py checks that both behave like PettingZoo's own.


class _AssertOutOfBounds(wrappers.AssertOutOfBoundsWrapper):
    """`AssertOutOfBoundsWrapper` with a fast path for plain in-range ints (same checks)."""

    def __init__(self, env: AECEnv):
        super().__init__(env)
        self._num_actions = env.unwrapped._num_actions

    def step(self, action: Any) -> None:
        """Step; ``Discrete.contains`` is only consulted for anything but a plain int."""
        if type(action) is int and 0 <= action < self._num_actions:
            self.env.step(action)
        else:
            super().step(action)


_HOT_ATTRIBUTES = ("agent_selection", "agents", "rewards", "terminations", "truncations", "infos")


class _OrderEnforcing(wrappers.OrderEnforcingWrapper):
    """`OrderEnforcingWrapper` whose hot reads skip the ``__getattr__`` chain.

    The per-decision reads (``agent_selection``, ``agents``, ``rewards``, ``terminations``,
    ``truncations``, ``infos``, ``last()``) go straight to the unwrapped env, which is
    what the chain of pass-through wrappers returns anyway; before ``reset()`` they raise
    the same errors as the standard wrapper.
    """

    def __init__(self, env: AECEnv):
        super().__init__(env)
        self._raw = env.unwrapped

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """As `AECEnv.last` (the wrappers below only pass ``observe`` through)."""
        if not self._has_reset:
            raise AttributeError("agent_selection cannot be accessed before reset")
        return self._raw.last(observe)

    def step(self, action: Any) -> None:
        """As `OrderEnforcingWrapper.step`, reading ``agents`` directly."""
        if self._has_reset and self._raw.agents:
            self._has_updated = True
            self.env.step(action)
        else:
            super().step(action)

    def agent_iter(self, max_iter: int = 2**63) -> AECOrderEnforcingIterable:
        """As `OrderEnforcingWrapper.agent_iter`, with direct reads in ``__next__``."""
        if not self._has_reset:
            EnvLogger.error_agent_iter_before_reset()
        return _OrderEnforcingIterable(self, max_iter)


class _OrderEnforcingIterable(AECOrderEnforcingIterable):
    def __iter__(self) -> _OrderEnforcingIterator:
        return _OrderEnforcingIterator(self.env, self.max_iter)


class _OrderEnforcingIterator(AECOrderEnforcingIterator):
    """`AECOrderEnforcingIterator` with the same checks, reading the unwrapped env."""

    def __next__(self) -> str:
        raw = self.env._raw
        if not raw.agents or self.iters_til_term <= 0:
            raise StopIteration
        self.iters_til_term -= 1
        if not self.env._has_updated:
            raise AssertionError("need to call step() or reset() in a loop over `agent_iter`")
        self.env._has_updated = False
        return raw.agent_selection


def _hot_property(name: str) -> property:
    def read(self: _OrderEnforcing) -> Any:
        if not self._has_reset:
            raise AttributeError(f"{name} cannot be accessed before reset")
        return getattr(self._raw, name)

    return property(read, doc=f"The unwrapped env's ``{name}`` (after reset).")


for _name in _HOT_ATTRIBUTES:
    setattr(_OrderEnforcing, _name, _hot_property(_name))


def env(rules: SkyjoRules | None = None, **options: Any) -> AECEnv:
    """`raw_env` in PettingZoo's standard wrappers (the same arguments).

    `AssertOutOfBoundsWrapper` rejects actions outside ``Discrete(A)`` and
    `OrderEnforcingWrapper` rejects calls before ``reset()``. Both are thin subclasses of
    PettingZoo's own classes that only add fast paths (plain-int bounds check, direct reads
    of per-decision attributes) with the same behaviour. Illegal-but-in-range actions are
    the env's own business (raise or penalize).
    """
    return _OrderEnforcing(_AssertOutOfBounds(raw_env(rules, **options)))


__all__ = ["SkyjoAECEnv", "env", "raw_env"]
