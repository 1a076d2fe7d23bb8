"""The batched learner core: N games with one learner seat each, opponents played in batch.

`LearnerGames` holds ``N`` games in one `BatchState`, each with one learner seat; after
every learner decision the opponents (objects of the `Agent` protocol) act in batch until
every game is back at a learner decision or over, so every observation and reward handed
to the learner is its own. `skyjo_env.single_agent.SkyjoGymEnv` is the Gymnasium view over
one such game; `skyjo_env.vec_env.SkyjoVecEnv` the Stable-Baselines3 view over many. The
compiled helpers here do the per-game loops of both.

Rewards are those of `skyjo_env.rewards` (`seat_rewards_into`), taken for the learner's
seat and summed over the opponents' moves between two learner decisions.

Failures: a bad learner action is rejected before anything changes. Anything that fails
once the games are being played (an opponent that raises, returns actions that are not
integers of the right shape, or plays an illegal action) leaves them half-played: the
error propagates naming the opponent, and every later `LearnerGames.advance` raises
`EnvNeedsResetError` until all games are restarted (the envs' ``reset()``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numba
import numpy as np

from skyjo_env.core import kernels
from skyjo_env.core.actions import Phase, num_actions
from skyjo_env.core.engine import (
    BatchState,
    IllegalActionError,
    illegal_action_message,
    new_batch,
    reset,
    step,
)
from skyjo_env.core.jit import jit
from skyjo_env.core.layout import (
    CLEARED,
    CURRENT,
    DECISIONS,
    DISCARD_SIZE,
    DRAW_SIZE,
    EVENT_GAME_ENDED,
    EVENT_TRUNCATED,
    FINISHER,
    HELD,
    HIDDEN,
    PHASE,
    PREV_FINISHER,
    REVEALS_DONE,
    ROUND,
    STARTER,
    TRUNCATED,
    TURN,
)
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationEncoder, encode_into, view_arguments
from skyjo_env.protocol import Agent, reads_observations
from skyjo_env.rewards import seat_rewards_into
from skyjo_env.view_options import check_episode_options, engine_rules

#: What may be passed as opponents: one agent for every opponent seat, one agent per
#: opponent seat (relative to the learner), or a chooser called at every game start.
Opponents = Agent | Sequence[Agent] | Callable[[np.random.Generator], Any]

_GAME_OVER = int(Phase.GAME_OVER)
_JIT_DISABLED = bool(numba.config.DISABLE_JIT)


class OpponentError(RuntimeError):
    """An opponent agent raised inside the env; the message names it, ``__cause__`` is the
    agent's own exception."""


class EnvNeedsResetError(RuntimeError):
    """A step or reset failed part-way earlier: the games are half-played until reset."""


def agent_name(agent: Any) -> str:
    """The agent's ``name`` for messages (its class name if it has none)."""
    return str(getattr(agent, "name", type(agent).__name__))


def _one_line(error: BaseException, limit: int = 200) -> str:
    """``Type: first line of the message`` of ``error``, at most ``limit`` characters."""
    text = f"{type(error).__name__}: {str(error).strip()}".splitlines()[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


def opponent_seed(seed: int) -> np.random.SeedSequence:
    """The seed sequence of the default random opponent of an env seeded with ``seed``.

    A child of ``seed`` (spawn key 1), so the opponent's draws never coincide with the
    env's own generator (seeded with ``seed`` itself).
    """
    return np.random.SeedSequence(seed, spawn_key=(1,))


# ---------------------------------------------------------------- compiled helpers


@jit
def observe_games(games, observers, grid, slot_state, discard_pile, game, seat, params,
                  card_values, card_counts, table, value_scale, deck_size, target_score,
                  unseen, observations):
    """Observations of games ``games`` (int64 (M,)) from ``observers`` (int64 (M,)) into
    row ``k`` of ``observations`` (float32 (M, O)). (``params`` is unused: the argument
    tuple is the one every compiled view takes, `skyjo_env.encoding.view_arguments`; the
    learner's masks come from `learner_masks`.)
    """
    for k in range(games.shape[0]):
        encode_into(games[k], observers[k], grid, slot_state, discard_pile, game, seat,
                    card_values, card_counts, table, value_scale, deck_size, target_score,
                    unseen, observations[k])


@jit
def gather_opponent_views(learner_seat, over, encode, games, observers, grid, slot_state,
                          discard_pile, game, seat, params, card_values, card_counts, table,
                          value_scale, deck_size, target_score, unseen, observations, masks):
    """Find the games where an opponent is to act and encode what that opponent sees.

    Writes the first ``count`` entries of ``games``/``observers`` (int64 (N,)) and rows of
    ``masks`` (bool (N, A)), and, when ``encode``, of ``observations`` (float32 (N, O));
    returns ``count``.
    """
    count = 0
    for b in range(game.shape[0]):
        if over[b] or game[b, PHASE] == _GAME_OVER:
            continue
        current = game[b, CURRENT]
        if current != learner_seat[b]:
            games[count] = b
            observers[count] = current
            if encode:
                encode_into(b, current, grid, slot_state, discard_pile, game, seat,
                            card_values, card_counts, table, value_scale, deck_size,
                            target_score, unseen, observations[count])
            kernels.legal_mask_into(b, slot_state, game, params, masks[count])
            count += 1
    return count


@jit
def is_allowed(masks, row, action):
    """Whether ``action`` is an action id that row ``row`` of ``masks`` (bool (R, A)) allows."""
    return 0 <= action < masks.shape[1] and masks[row, action]


@jit
def scatter_opponent_actions(games, chosen, masks, actions):
    """Write opponent ``chosen[k]`` (int (K,)) to ``actions[games[k]]`` (int64 (N,)) after
    checking it against ``masks[k]`` (bool (>=K, A)); returns the first bad ``k``, or -1
    (then nothing after it was written)."""
    for k in range(games.shape[0]):
        if not is_allowed(masks, k, chosen[k]):
            return k
        actions[games[k]] = chosen[k]
    return -1


@jit
def check_learner_actions(actions, masks, over, out):
    """Copy the learner's actions into ``out`` (int64 (N,)), -1 where the game is over.

    Returns the index of the first game whose action is not legal there (its ``masks`` row,
    bool (N, A)), or -1. ``out`` holds -1 for that game and every later illegal one.
    """
    first = -1
    for b in range(actions.shape[0]):
        if over[b]:
            out[b] = -1
        elif is_allowed(masks, b, actions[b]):
            out[b] = actions[b]
        else:
            out[b] = -1
            if first < 0:
                first = b
    return first


@jit
def learner_masks(slot_state, game, params, over, masks):
    """Legal actions of every game into ``masks`` (bool (N, A)); all False where ``over``
    (a game ended by a penalised illegal action is not over for the engine)."""
    for b in range(game.shape[0]):
        if over[b]:
            masks[b, :] = False
        else:
            kernels.legal_mask_into(b, slot_state, game, params, masks[b])


@jit
def apply_and_collect(grid, slot_state, draw_pile, discard_pile, game, seat, rng, final_grid,
                      final_state, params, deck, actions, events, learner_seat, game_bonus,
                      scratch, rewards, terminated, truncated, over):
    """Apply checked ``actions`` (the engine's `apply_actions`), then `collect_events`."""
    kernels.apply_actions(grid, slot_state, draw_pile, discard_pile, game, seat, rng,
                          final_grid, final_state, params, deck, actions, events)
    collect_events(events, seat, learner_seat, game_bonus, scratch, rewards, terminated,
                   truncated, over)


@jit
def collect_events(events, seat, learner_seat, game_bonus, scratch, rewards, terminated,
                   truncated, over):
    """Add each game's learner reward for a step and mark games that ended.

    Args:
        events: int32 (N,) event bits of the step.
        seat: int32 (N, P, NUM_SEAT_FIELDS), the engine's seat counters.
        learner_seat: int64 (N,).
        game_bonus: Whether the game-end placement reward applies.
        scratch: float64 (P,) work space.
        rewards: float64 (N,), accumulated in place.
        terminated, truncated, over: bool (N,), set in place for games that ended.
    """
    for b in range(events.shape[0]):
        event = events[b]
        if event == 0:
            continue
        if seat_rewards_into(event, seat, b, game_bonus, scratch):
            rewards[b] += scratch[learner_seat[b]]
        if (event & EVENT_GAME_ENDED) != 0:
            over[b] = True
            if (event & EVENT_TRUNCATED) != 0:
                truncated[b] = True
            else:
                terminated[b] = True


@jit
def next_streams(rng, which):
    """The next output of each listed game's own stream: uint64 (K,) (advances them)."""
    out = np.empty(which.shape[0], np.uint64)
    for k in range(which.shape[0]):
        out[k] = kernels.next_random(rng, which[k])
    return out


def integer_actions(actions, shape: tuple[int, ...], what: str) -> np.ndarray:
    """``actions`` as int64 after checking they are integers of ``shape``.

    Bool arrays are refused (``True`` is not an action id), and so are floats, even
    integral ones: a cast would hide a caller's bug.

    Raises:
        ValueError: Naming ``what`` and the dtype and shape received.
    """
    actions = np.asarray(actions)
    if actions.shape != shape or actions.dtype.kind not in "iu":
        raise ValueError(
            f"{what} must be an integer array of shape {shape}, got dtype {actions.dtype} "
            f"shape {actions.shape}"
        )
    return actions.astype(np.int64, copy=False)


def start_from_streams(state: BatchState, which: np.ndarray, streams: np.ndarray) -> None:
    """Start games ``which`` (int64 (K,)) whose random streams begin at ``streams``.

    The engine's `reset` minus the int-seed conversion: a game continued from another
    game's stream (uint64 (K,), from `next_streams`) needs no `SeedSequence`.
    """
    with np.errstate(over="ignore"):  # wrapping arithmetic when the kernels run as Python
        kernels.start_games(*state.arrays, which, streams, state.deck[:0])


# ---------------------------------------------------------------- the batched core


class LearnerGames:
    """``N`` games, one learner seat each; the opponents move in batch between decisions.

    All arrays are preallocated; `advance` and `start` change them in place.

    Attributes:
        rules: The rules as given (``batch.rules`` are those the engine runs).
        batch: The engine state of the ``N`` games.
        encoder: The observation encoder.
        learner_seat: int64 (N,), the learner's seat in each game.
        rewards: float64 (N,), learner rewards accumulated since they were last cleared.
        terminated: bool (N,), the episode ended (game end, round end in ``"round"`` mode,
            or a penalised illegal action).
        truncated: bool (N,), the engine's turn cap ended the game.
        over: bool (N,), ``terminated | truncated``: the game waits for `start`.
        masks: bool (N, A), the learner's legal actions (all False where over, and
            everywhere after a failure, until restarted).
        failure: None while the games are consistent; after an exception escaped
            `advance` or `start` part-way, a one-line description of it (then `advance`
            refuses with `EnvNeedsResetError` until every game is restarted).
    """

    def __init__(
        self,
        rules: SkyjoRules,
        num_games: int,
        opponents: Opponents,
        episode: str = "game",
        illegal_action: str = "raise",
        illegal_penalty: float = -1.0,
        rng: np.random.Generator | None = None,
    ):
        """Allocate the games (none started: call `start`).

        Args:
            rules: The rules.
            num_games: ``N >= 1``.
            opponents: See `set_opponents`.
            episode: ``"game"`` or ``"round"`` (see `skyjo_env.aec.SkyjoAECEnv`).
            illegal_action: ``"raise"`` or ``"penalize"``.
            illegal_penalty: The learner's reward for an illegal action under ``"penalize"``.
            rng: The env's generator, handed to an opponent chooser (see `set_opponents`).
        """
        check_episode_options(episode, illegal_action, illegal_penalty)
        self.rules = rules
        self.episode = episode
        self.illegal_action = illegal_action
        self.illegal_penalty = float(illegal_penalty)
        self._game_bonus = episode == "game"
        self._penalize = illegal_action == "penalize"
        run_rules = engine_rules(rules, episode)
        self.batch = batch = new_batch(run_rules, num_games)
        self.encoder = ObservationEncoder(run_rules)
        self.num_games = num_games
        self.num_players = rules.num_players
        self.num_actions = num_actions(rules.num_slots)
        self.obs_size = self.encoder.size
        self.learner_seat = np.zeros(num_games, np.int64)
        self.rewards = np.zeros(num_games, np.float64)
        self.terminated = np.zeros(num_games, np.bool_)
        self.truncated = np.zeros(num_games, np.bool_)
        self.over = np.ones(num_games, np.bool_)
        self.masks = np.zeros((num_games, self.num_actions), np.bool_)
        self._all_games = np.arange(num_games, dtype=np.int64)
        self._games = np.empty(num_games, np.int64)
        self._observers = np.empty(num_games, np.int64)
        self._actions = np.full(num_games, -1, np.int64)
        self._events = np.zeros(num_games, np.int32)
        self._scratch = np.zeros(self.num_players, np.float64)
        self._opp_obs = np.empty((num_games, self.obs_size), np.float32)
        self._opp_masks = np.empty((num_games, self.num_actions), np.bool_)
        self._step_args = (*batch.arrays, self._actions, self._events)
        self._encode_args = view_arguments(batch, self.encoder)
        self._agents: list[Agent] = []
        self._index_of: dict[int, int] = {}
        self._assignment = np.zeros((num_games, max(1, self.num_players - 1)), np.int64)
        self._chooser: Callable[[np.random.Generator], Any] | None = None
        self._single_agent = True
        self.failure: str | None = None
        self.set_opponents(opponents, rng)

    # -------------------------------------------------------------- opponents

    def _register(self, agent: Any) -> int:
        if not isinstance(agent, Agent):
            raise ValueError(
                f"an opponent must follow the Agent protocol (name, act(observations, "
                f"action_masks)), got {type(agent).__name__}"
            )
        # keyed by identity; the agents list keeps every registered agent alive
        index = self._index_of.get(id(agent))
        if index is None:
            index = self._index_of[id(agent)] = len(self._agents)
            self._agents.append(agent)
        return index

    def _seat_indices(self, choice: Any) -> np.ndarray:
        """Registry indices (P-1,) for one game's opponents, relative seat order."""
        others = self.num_players - 1
        if isinstance(choice, Agent):
            return np.full(others, self._register(choice), np.int64)
        if isinstance(choice, Sequence) and not isinstance(choice, str):
            if len(choice) == 1:
                return np.full(others, self._register(choice[0]), np.int64)
            if len(choice) != others:
                raise ValueError(
                    f"got {len(choice)} opponents for {others} opponent seats: give one agent "
                    f"for all seats or exactly {others}"
                )
            return np.array([self._register(agent) for agent in choice], np.int64)
        raise ValueError(
            "opponents must be an Agent, a sequence of Agents (one per opponent seat, in seat "
            f"order after the learner) or a callable choosing them, got {type(choice).__name__}"
        )

    def set_opponents(self, opponents: Opponents, rng: np.random.Generator | None = None) -> None:
        """Change who plays the opponent seats, from the next opponent decision on.

        Args:
            opponents: One `Agent` for every opponent seat; or a sequence of ``P-1`` agents,
                agent ``k`` playing the seat ``k+1`` places after the learner (a sequence of
                one counts as one agent for all seats); or a callable
                ``chooser(rng) -> Agent | Sequence[Agent]`` called at every game start with
                the env's generator to pick that game's opponents.
            rng: The generator handed to a chooser for the games already running (required
                with a chooser).

        Raises:
            ValueError: Something that is not an agent, or the wrong number of agents
                (the opponents in use then stay as they were, as after any exception the
                chooser raises).
        """
        saved = (self._agents, self._index_of, self._assignment.copy(), self._chooser)
        self._agents = []
        self._index_of = {}
        try:
            if not isinstance(opponents, (Agent, Sequence)) and callable(opponents):
                if rng is None:
                    raise ValueError("set_opponents needs an rng to apply a chooser")
                self._chooser = opponents
                for b in range(self.num_games):
                    self._assignment[b] = self._seat_indices(opponents(rng))
            else:
                self._chooser = None
                self._assignment[:] = self._seat_indices(opponents)
        except BaseException:
            # a half-filled assignment would point games at agents of the new registry
            self._agents, self._index_of, self._assignment, self._chooser = saved
            raise
        finally:
            self._agents_changed()

    def _agents_changed(self) -> None:
        self._single_agent = len(self._agents) == 1
        self._encode_opponents = any(reads_observations(agent) for agent in self._agents)

    @property
    def opponents(self) -> list[Agent]:
        """The distinct opponent agents in use."""
        return list(self._agents)

    def _choose_opponents(self, which: np.ndarray, rng: np.random.Generator) -> None:
        if self._chooser is None:
            return
        for b in which:
            self._assignment[b] = self._seat_indices(self._chooser(rng))
        if len(self._agents) > 4 * self.num_games + 16:
            # forget agents no game uses any more
            used = np.unique(self._assignment)
            self._agents = [self._agents[i] for i in used]
            self._index_of = {id(agent): i for i, agent in enumerate(self._agents)}
            self._assignment = np.searchsorted(used, self._assignment).astype(np.int64)
        self._agents_changed()

    # -------------------------------------------------------------- play

    def check_usable(self) -> None:
        """Raise if an earlier `advance` or `start` failed part-way (see ``failure``).

        Raises:
            EnvNeedsResetError: Naming the earlier failure and asking for ``reset()``.
        """
        if self.failure is not None:
            raise EnvNeedsResetError(
                f"an earlier step or reset failed part-way ({self.failure}), leaving the "
                f"games half-played: call reset() before stepping again"
            )

    def _failed(self, error: BaseException) -> None:
        """Record a failure part-way through play; no learner action is legal until reset."""
        self.failure = _one_line(error)
        self.masks[:] = False

    def start(self, which: np.ndarray, seeds: Sequence[int] | np.ndarray, seats: np.ndarray,
              rng: np.random.Generator) -> None:
        """Start new games and play the opponents up to each one's first learner decision.

        Restarting every game clears an earlier failure (see ``failure``); restarting some
        leaves it in place.

        Args:
            which: int64 (K,) game indices.
            seeds: K non-negative int game seeds (the engine deals from them, as
                `skyjo_env.core.engine.reset` does), or a uint64 (K,) array of raw streams
                from `next_game_streams`.
            seats: int64 (K,) the learner's seat in each started game.
            rng: The env's generator (handed to an opponent chooser).

        Raises:
            OpponentError, IllegalActionError, ValueError: An opponent failed (named in the
                message); ``failure`` is then set.
        """
        which = np.asarray(which, np.int64)
        earlier = self.failure
        try:
            if isinstance(seeds, np.ndarray) and seeds.dtype == np.uint64:
                start_from_streams(self.batch, which, seeds)
            else:
                reset(self.batch, list(seeds), which)
            self.learner_seat[which] = seats
            self.rewards[which] = 0.0
            self.terminated[which] = False
            self.truncated[which] = False
            self.over[which] = False
            self._choose_opponents(which, rng)
            self._play_opponents()
            self._refresh_masks()
        except BaseException as error:
            self._failed(error)
            raise
        if earlier is not None and np.unique(which).size < self.num_games:
            self.masks[:] = False  # the games not restarted are still half-played
        else:
            self.failure = None

    def advance(self, actions: np.ndarray) -> None:
        """Apply the learner's actions, then the opponents' until learner decisions again.

        Args:
            actions: int (N,) one action per game; ignored (may be anything) where the
                game is over.

        Raises:
            IllegalActionError: An illegal learner action with ``illegal_action="raise"``
                (nothing changed), or an illegal opponent action (in any mode).
            ValueError: ``actions`` are not integers of shape (N,) (nothing changed), or
                an opponent's are not.
            OpponentError: An opponent agent raised.
            EnvNeedsResetError: An earlier call failed part-way (see ``failure``).

        Any exception but the first two ``nothing changed`` cases (and the refusal) leaves
        the games half-played and sets ``failure``.
        """
        self.check_usable()
        actions = integer_actions(actions, (self.num_games,), "actions")
        acts = self._actions
        first = check_learner_actions(actions, self.masks, self.over, acts)
        if first >= 0 and not self._penalize:
            raise IllegalActionError(illegal_action_message(self.batch, first, int(actions[first])))
        try:
            if first >= 0:
                illegal = ~self.over & (acts < 0)
                self.rewards[illegal] += self.illegal_penalty
                self.terminated[illegal] = True
                self.over[illegal] = True
            self._step(acts)
            self._play_opponents()
            self._refresh_masks()
        except BaseException as error:
            self._failed(error)
            raise

    def _step(self, acts: np.ndarray) -> None:
        """Apply ``acts`` (each checked against a legal mask already, -1 = no move), then
        add the rewards."""
        if _JIT_DISABLED:  # the engine's step runs the uncompiled kernels with its errstate
            step(self.batch, acts, self._events)
            collect_events(self._events, self.batch.seat, self.learner_seat, self._game_bonus,
                           self._scratch, self.rewards, self.terminated, self.truncated,
                           self.over)
        else:
            apply_and_collect(*self._step_args, self.learner_seat, self._game_bonus,
                              self._scratch, self.rewards, self.terminated, self.truncated,
                              self.over)

    def _play_opponents(self) -> None:
        acts = self._actions
        while True:
            count = gather_opponent_views(self.learner_seat, self.over, self._encode_opponents,
                                          self._games, self._observers, *self._encode_args,
                                          self._opp_obs, self._opp_masks)
            if count == 0:
                return
            games = self._games[:count]
            obs = self._opp_obs[:count]
            masks = self._opp_masks[:count]
            acts.fill(-1)
            if self._single_agent:
                self._opponent_acts(self._agents[0], games, obs, masks)
            else:
                observers = self._observers[:count]
                relative = (observers - self.learner_seat[games]) % self.num_players - 1
                who = self._assignment[games, relative]
                for index in np.unique(who):
                    rows = np.flatnonzero(who == index)
                    self._opponent_acts(self._agents[index], games[rows], obs[rows], masks[rows])
            self._step(acts)

    def _opponent_acts(self, agent: Agent, games: np.ndarray, obs: np.ndarray,
                       masks: np.ndarray) -> None:
        """Ask ``agent`` for games ``games`` (int64 (K,)), check its int (K,) answer against
        ``masks`` (bool (K, A)) and file it under those games in ``_actions``.

        Raises:
            OpponentError: The agent raised.
            ValueError: Its actions are not integers of shape (K,).
            IllegalActionError: One of them is illegal.
        """
        try:
            chosen = agent.act(obs, masks)
        except Exception as error:
            raise OpponentError(
                f"opponent agent {agent_name(agent)!r} raised {_one_line(error)}"
            ) from error
        chosen = np.asarray(chosen)
        if chosen.shape != games.shape or chosen.dtype.kind not in "iu":
            integer_actions(chosen, games.shape, f"opponent agent {agent_name(agent)!r}'s actions")
        bad = scatter_opponent_actions(games, chosen, masks, self._actions)
        if bad >= 0:
            message = illegal_action_message(self.batch, int(games[bad]), int(chosen[bad]))
            raise IllegalActionError(f"opponent agent {agent_name(agent)!r} played an {message}")

    def _refresh_masks(self) -> None:
        batch = self.batch
        learner_masks(batch.slot_state, batch.game, batch.params, self.over, self.masks)

    def observe(self, out: np.ndarray | None = None, which: np.ndarray | None = None) -> np.ndarray:
        """Games seen from their learner's seat: float32 (N, O) (into ``out`` if given).

        Args:
            out: Optional float32 (N, O) array to fill.
            which: Optional int64 (K,) game indices: only those rows are (re)written.
        """
        if out is None:
            out = np.empty((self.num_games, self.obs_size), np.float32)
        if which is None:
            observe_games(self._all_games, self.learner_seat, *self._encode_args, out)
        else:
            which = np.asarray(which, np.int64)
            rows = np.empty((which.size, self.obs_size), np.float32)
            observe_games(which, self.learner_seat[which], *self._encode_args, rows)
            out[which] = rows
        return out

    def next_game_streams(self, which: np.ndarray) -> np.ndarray:
        """Streams of the next games at ``which``: uint64 (K,), each the next output of the
        finished game's own random stream.

        The same rule as `skyjo_env.aec.SkyjoAECEnv.reset` without a seed, so a batch game
        and an AEC env started from the same seed go on to the same next games.
        """
        with np.errstate(over="ignore"):  # wrapping arithmetic when the kernels run as Python
            return next_streams(self.batch.rng, np.asarray(which, np.int64))

    # -------------------------------------------------------------- state export / import

    def _state_layout(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """Name -> (shape, dtype) of every array `export_state` writes."""
        layout = {f"batch_{name}": (getattr(self.batch, name).shape, getattr(self.batch, name).dtype)
                  for name in STATE_BATCH_FIELDS}
        layout.update({f"games_{name}": (getattr(self, name).shape, getattr(self, name).dtype)
                       for name in STATE_GAMES_FIELDS})
        layout["games_assignment"] = (self._assignment.shape, self._assignment.dtype)
        return layout

    def _settings(self) -> dict[str, Any]:
        """What an imported state must have been exported under (JSON-normalised)."""
        return json.loads(json.dumps({
            "num_games": self.num_games,
            "rules": self.rules.to_dict(),
            "episode": self.episode,
            "illegal_action": self.illegal_action,
            "illegal_penalty": self.illegal_penalty,
        }))

    def export_state(self, agent_key: Callable[[Agent], str]
                     ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Everything the future of these games depends on, as plain data (no pickles).

        Not included: the opponent agents themselves (named by ``agent_key``; their own
        state, e.g. a generator, is the caller's to save) and a chooser (see `import_state`).

        Args:
            agent_key: Gives each opponent agent in use a name (distinct agents, distinct
                names) that `import_state`'s ``agent_for_key`` turns back into an agent.

        Returns:
            ``(meta, arrays)``: a JSON-able dict, and copies of the engine arrays
            (``batch_<field>`` of `STATE_BATCH_FIELDS`), the per-game arrays
            (``games_<field>`` of `STATE_GAMES_FIELDS`) and ``games_assignment`` (int64
            (N, max(1, P-1)), each game's opponent per seat after the learner, an index
            into ``meta["opponents"]``).

        Raises:
            ValueError: ``agent_key`` gave a non-string, or one name to two agents.
        """
        keys = []
        for agent in self._agents:
            key = agent_key(agent)
            if not isinstance(key, str):
                raise ValueError(f"agent_key must return a str, got {key!r} for opponent agent "
                                 f"{agent_name(agent)!r}")
            if key in keys:
                raise ValueError(f"agent_key gave the name {key!r} to two different opponent "
                                 f"agents: names must be distinct")
            keys.append(key)
        meta = {
            "version": STATE_VERSION,
            **self._settings(),
            "opponents": keys,
            "chooser": self._chooser is not None,
            "failure": self.failure,
        }
        arrays = {f"batch_{name}": getattr(self.batch, name).copy() for name in STATE_BATCH_FIELDS}
        arrays.update({f"games_{name}": getattr(self, name).copy() for name in STATE_GAMES_FIELDS})
        arrays["games_assignment"] = self._assignment.copy()
        return meta, arrays

    def import_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray],
                     agent_for_key: Callable[[str], Agent]) -> None:
        """Continue from an `export_state` of games built with the same settings.

        Everything is checked before anything changes: a refused state leaves these games
        as they were. Opponents exported under a chooser keep this object's chooser for
        the games started from now on (it must have one: a callable is not data).

        Args:
            meta: The JSON part of `export_state` (may have been through ``json``).
            arrays: Its arrays, by name, of exactly the exported shapes and dtypes.
            agent_for_key: Returns the agent for each name in ``meta["opponents"]``.

        Raises:
            ValueError: One line naming what is wrong: a missing or different meta entry
                (version, rules, number of games, episode options), a missing array, one of
                the wrong type, shape or dtype, values the engine cannot hold (a seat, slot
                state, phase, pile size or card outside its range), masks that are not the
                games' legal actions, or a name ``agent_for_key`` did not turn into an agent.
        """
        if not isinstance(meta, dict):
            raise ValueError(f"state meta must be a dict, got {type(meta).__name__}")
        if meta.get("version") != STATE_VERSION:
            raise ValueError(f"state meta 'version' is {meta.get('version')!r}; this "
                             f"LearnerGames imports version {STATE_VERSION}")
        for name, value in self._settings().items():
            if name not in meta:
                raise ValueError(f"state meta has no {name!r}")
            if meta[name] != value:
                raise ValueError(f"state meta {name!r} is {meta[name]!r}; these games have "
                                 f"{value!r}")
        keys, chooser, failure = meta.get("opponents"), meta.get("chooser"), meta.get("failure")
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
            raise ValueError(f"state meta 'opponents' must be a non-empty list of names, got "
                             f"{keys!r}")
        if not isinstance(chooser, bool):
            raise ValueError(f"state meta 'chooser' must be a bool, got {chooser!r}")
        if chooser and self._chooser is None:
            raise ValueError("the state was exported with an opponent chooser: give these "
                             "games the same chooser (set_opponents) before importing it")
        if failure is not None and not isinstance(failure, str):
            raise ValueError(f"state meta 'failure' must be None or a str, got {failure!r}")
        new = _checked_arrays(arrays, self._state_layout())
        _check_state_values(new, self.batch, len(keys))
        masks = np.empty_like(new["games_masks"])
        if failure is None:
            learner_masks(new["batch_slot_state"], new["batch_game"], self.batch.params,
                          new["games_over"], masks)
        else:
            masks[:] = False
        if not np.array_equal(masks, new["games_masks"]):
            raise ValueError("state array 'games_masks' is not the games' legal actions")
        agents = []
        for key in keys:
            agent = agent_for_key(key)
            if not isinstance(agent, Agent):
                raise ValueError(f"agent_for_key({key!r}) gave {type(agent).__name__}, not an "
                                 f"Agent")
            agents.append(agent)
        # one registry entry per distinct agent, as `_register` keeps it
        index_of: dict[int, int] = {}
        unique: list[Agent] = []
        remap = np.empty(len(agents), np.int64)
        for i, agent in enumerate(agents):
            if id(agent) not in index_of:
                index_of[id(agent)] = len(unique)
                unique.append(agent)
            remap[i] = index_of[id(agent)]
        # in place: the compiled helpers' argument tuples hold these very arrays
        for name in STATE_BATCH_FIELDS:
            getattr(self.batch, name)[...] = new[f"batch_{name}"]
        for name in STATE_GAMES_FIELDS:
            getattr(self, name)[...] = new[f"games_{name}"]
        self._assignment[...] = remap[new["games_assignment"]]
        self._agents, self._index_of = unique, index_of
        if not chooser:
            self._chooser = None
        self.failure = failure
        self._agents_changed()


#: The `BatchState` arrays `LearnerGames.export_state` saves (``params`` and ``deck``
#: follow from the rules).
STATE_BATCH_FIELDS = ("grid", "slot_state", "draw_pile", "discard_pile", "game", "seat", "rng",
                      "final_grid", "final_slot_state")
#: The per-game `LearnerGames` arrays it saves beside them.
STATE_GAMES_FIELDS = ("learner_seat", "rewards", "terminated", "truncated", "over", "masks")
#: Version of the `LearnerGames.export_state` format.
STATE_VERSION = 1


def _checked_arrays(arrays: Any, layout: dict[str, tuple[tuple[int, ...], np.dtype]]
                    ) -> dict[str, np.ndarray]:
    """C-contiguous writable copies of ``arrays[name]`` for every name in ``layout``.

    Raises:
        ValueError: ``arrays`` is not a mapping, or an array is missing or not a numpy array
            of the layout's shape and dtype (naming it).
    """
    if not isinstance(arrays, Mapping):
        raise ValueError(f"state arrays must be a mapping of name -> array, got "
                         f"{type(arrays).__name__}")
    checked = {}
    for name, (shape, dtype) in layout.items():
        if name not in arrays:
            raise ValueError(f"state array {name!r} is missing")
        array = arrays[name]
        if not isinstance(array, np.ndarray) or array.shape != shape or array.dtype != dtype:
            got = (f"dtype {array.dtype} shape {array.shape}" if isinstance(array, np.ndarray)
                   else type(array).__name__)
            raise ValueError(f"state array {name!r} must be {dtype} of shape {shape}, got {got}")
        checked[name] = np.array(array, order="C", copy=True)
    return checked


def _check_state_values(arrays: dict[str, np.ndarray], batch: BatchState, num_agents: int) -> None:
    """Refuse values the compiled kernels would read as out-of-range indices.

    Args:
        arrays: Checked state arrays (`_checked_arrays`) of games like ``batch``'s.
        batch: The games they are for (rules, deck).
        num_agents: Number of opponent names the assignment indexes.

    Raises:
        ValueError: Naming the first array with a value out of range.
    """
    players, deck_size = batch.rules.num_players, batch.deck.shape[0]
    game = arrays["batch_game"]

    def require(ok: np.ndarray | bool, name: str, allowed: str) -> None:
        if not np.all(ok):
            raise ValueError(f"state array {name!r} holds values outside {allowed}")

    for name in ("batch_slot_state", "batch_final_slot_state"):
        require((arrays[name] >= HIDDEN) & (arrays[name] <= CLEARED), name, "the slot states")
    require((game[:, PHASE] >= 0) & (game[:, PHASE] <= _GAME_OVER), "batch_game",
            "the phases (column PHASE)")
    for column, low, label in ((CURRENT, 0, "CURRENT"), (STARTER, 0, "STARTER"),
                               (FINISHER, -1, "FINISHER"), (PREV_FINISHER, -1, "PREV_FINISHER")):
        require((game[:, column] >= low) & (game[:, column] < players), "batch_game",
                f"{low} .. {players - 1} (column {label})")
    for column, label in ((ROUND, "ROUND"), (TURN, "TURN"), (REVEALS_DONE, "REVEALS_DONE"),
                          (DECISIONS, "DECISIONS"), (DRAW_SIZE, "DRAW_SIZE"),
                          (DISCARD_SIZE, "DISCARD_SIZE")):
        require(game[:, column] >= 0, "batch_game", f"0 .. (column {label})")
    require(game[:, DRAW_SIZE] + game[:, DISCARD_SIZE] <= deck_size, "batch_game",
            f"0 .. {deck_size} cards in the two piles (columns DRAW_SIZE, DISCARD_SIZE)")
    require((game[:, TRUNCATED] == 0) | (game[:, TRUNCATED] == 1), "batch_game",
            "0 .. 1 (column TRUNCATED)")
    cards = batch.rules.card_values
    in_deck = "the deck's card values"
    holding = np.isin(game[:, PHASE], (int(Phase.PLACE_DRAWN), int(Phase.PLACE_DISCARD)))
    require(np.isin(game[holding, HELD], cards), "batch_game", f"{in_deck} (column HELD)")
    for values, states in (("batch_grid", "batch_slot_state"),
                           ("batch_final_grid", "batch_final_slot_state")):
        live = arrays[states] != CLEARED
        require(np.isin(arrays[values][live], cards), values, f"{in_deck} (uncleared slots)")
    positions = np.arange(deck_size)
    for pile, column in (("batch_draw_pile", DRAW_SIZE), ("batch_discard_pile", DISCARD_SIZE)):
        live = positions[None, :] < game[:, column, None]
        require(np.isin(arrays[pile][live], cards), pile, f"{in_deck} (cards in the pile)")
    seats = arrays["games_learner_seat"]
    require((seats >= 0) & (seats < players), "games_learner_seat", f"0 .. {players - 1}")
    assignment = arrays["games_assignment"]
    require((assignment >= 0) & (assignment < num_agents), "games_assignment",
            f"0 .. {num_agents - 1} (indices into meta 'opponents')")
    require(np.isfinite(arrays["games_rewards"]), "games_rewards", "the finite numbers")


# ------------------------------------------------------- what both env views export

#: The name the envs' ``export_state`` gives their own default random opponent (the
#: string is kept as first written: training checkpoints hold it).
DEFAULT_OPPONENT_KEY = "skyjo_vec_env:default_random"


def exported_opponent_key(default: Agent, agent_key: Callable[[Agent], str] | None
                          ) -> Callable[[Agent], str]:
    """The ``agent_key`` an env view passes to `LearnerGames.export_state`: its own
    ``default`` random opponent is `DEFAULT_OPPONENT_KEY`, every other agent is named by
    the caller's ``agent_key``.

    The returned function raises ``ValueError`` for an agent to name without
    ``agent_key``, or one that ``agent_key`` names `DEFAULT_OPPONENT_KEY`.
    """

    def key(agent: Agent) -> str:
        if agent is default:
            return DEFAULT_OPPONENT_KEY
        if agent_key is None:
            raise ValueError(f"opponent agent {agent_name(agent)!r} needs a name: pass "
                             f"agent_key to export_state")
        name = agent_key(agent)
        if name == DEFAULT_OPPONENT_KEY:
            raise ValueError(f"agent_key gave opponent agent {agent_name(agent)!r} the "
                             f"reserved name {DEFAULT_OPPONENT_KEY!r}")
        return name

    return key


def imported_opponent_agent(default: Agent, agent_for_key: Callable[[str], Agent] | None
                            ) -> Callable[[str], Agent]:
    """The ``agent_for_key`` an env view passes to `LearnerGames.import_state`, the
    inverse of `exported_opponent_key` (``ValueError`` for a name to look up without
    ``agent_for_key``)."""

    def agent(key: str) -> Agent:
        if key == DEFAULT_OPPONENT_KEY:
            return default
        if agent_for_key is None:
            raise ValueError(f"opponent {key!r} needs an agent: pass agent_for_key to "
                             f"import_state")
        return agent_for_key(key)

    return agent


def generator_from_state(state: Any, name: str) -> np.random.Generator:
    """A PCG64 generator in ``state`` (a ``bit_generator.state`` dict).

    Raises:
        ValueError: ``state`` is not a PCG64 state (naming the meta entry ``name``).
    """
    generator = np.random.default_rng()
    try:
        generator.bit_generator.state = state
    except (TypeError, ValueError, KeyError) as error:
        raise ValueError(f"state meta {name!r} is not a PCG64 generator state ({error})") from None
    return generator


def require_meta_entries(meta: Any, names: Sequence[str], flags: Sequence[str] = ()) -> None:
    """Raise ``ValueError`` unless ``meta`` is a dict holding every one of ``names`` and
    ``flags``, each of ``flags`` a bool."""
    if not isinstance(meta, dict):
        raise ValueError(f"state meta must be a dict, got {type(meta).__name__}")
    for name in (*names, *flags):
        if name not in meta:
            raise ValueError(f"state meta has no {name!r}")
    for name in flags:
        if not isinstance(meta[name], bool):
            raise ValueError(f"state meta {name!r} must be a bool, got {meta[name]!r}")


__all__ = [
    "DEFAULT_OPPONENT_KEY",
    "EnvNeedsResetError",
    "LearnerGames",
    "OpponentError",
    "Opponents",
    "STATE_BATCH_FIELDS",
    "STATE_GAMES_FIELDS",
    "STATE_VERSION",
    "agent_name",
    "check_learner_actions",
    "collect_events",
    "exported_opponent_key",
    "gather_opponent_views",
    "generator_from_state",
    "imported_opponent_agent",
    "learner_masks",
    "next_streams",
    "observe_games",
    "opponent_seed",
    "require_meta_entries",
    "start_from_streams",
]
