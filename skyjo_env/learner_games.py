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

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from skyjo_env.core import kernels, layout
from skyjo_env.core.actions import Phase, num_actions
from skyjo_env.core.engine import (
    BatchState,
    IllegalActionError,
    illegal_action_message,
    new_batch,
    reset,
    step,
)
from skyjo_env.core.errors import one_line
from skyjo_env.core.jit import JIT_DISABLED, jit, quiet_overflow
from skyjo_env.encoding import ObservationEncoder, encode_into, view_arguments
from skyjo_env.options import EnvOptions
from skyjo_env.protocol import Agent, reads_observations, shared_acting, shared_features
from skyjo_env.rewards import seat_rewards_into

#: What may be passed as opponents: one agent for every opponent seat, one agent per
#: opponent seat (relative to the learner), or a chooser called at every game start.
Opponents = Agent | Sequence[Agent] | Callable[[np.random.Generator], Any]

_GAME_OVER = int(Phase.GAME_OVER)


def _features_key(agent: Any) -> Any:
    """The key of ``agent``'s shared features (`skyjo_env.protocol.Agent`), or None."""
    features = shared_features(agent)
    return None if features is None else features.key


def _acting_key(agent: Any) -> Any:
    """The key of ``agent``'s shared acting (`skyjo_env.protocol.Agent`), or None (also
    without shared features: acting together starts from them)."""
    acting = shared_acting(agent)
    return None if acting is None or shared_features(agent) is None else acting.key


def _check_hashable_key(agent: Any, offer: Any, what: str) -> None:
    """Raise ValueError if ``offer.key`` (``agent``'s ``what``) cannot be hashed."""
    try:
        hash(offer.key)
    except (AttributeError, TypeError) as error:
        raise ValueError(f"opponent agent {agent_name(agent)!r}'s {what} needs a "
                         f"hashable key: {one_line(error)}") from None


def check_sharing_offers(agent: Any) -> None:
    """Raise ValueError if ``agent`` offers shared features or shared acting it cannot
    use (no ``act_on_features``, no ``act_together``, or a key that cannot be hashed).
    Shared acting without shared features is never used (`_acting_key`)."""
    features = shared_features(agent)
    acting = shared_acting(agent)
    if acting is not None and features is not None:
        if not callable(getattr(acting, "act_together", None)):
            raise ValueError(f"opponent agent {agent_name(agent)!r}'s shared_acting has no "
                             f"act_together(agents, members, features, action_masks)")
        _check_hashable_key(agent, acting, "shared_acting")
    if features is None:
        return
    if not callable(getattr(agent, "act_on_features", None)):
        raise ValueError(f"opponent agent {agent_name(agent)!r} offers shared_features but "
                         f"no act_on_features(features, action_masks)")
    _check_hashable_key(agent, features, "shared_features")


def sharing_groups(indices: np.ndarray, keys: Sequence[Any]) -> list[list[int]]:
    """The groups of two or more of ``indices`` (int64, ascending) with equal, not-None
    ``keys[index]``, each ascending, in the order of their first members."""
    members: dict[Any, list[int]] = {}
    for index in indices:
        key = keys[index]
        if key is not None:
            members.setdefault(key, []).append(int(index))
    return [group for group in members.values() if len(group) > 1]


class OpponentError(RuntimeError):
    """An opponent agent raised inside the env; the message names it, ``__cause__`` is the
    agent's own exception."""


class EnvNeedsResetError(RuntimeError):
    """A step or reset failed part-way earlier: the games are half-played until reset."""


def agent_name(agent: Any) -> str:
    """The agent's ``name`` for messages (its class name if it has none)."""
    return str(getattr(agent, "name", type(agent).__name__))


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
        if over[b] or game[b, layout.PHASE] == _GAME_OVER:
            continue
        current = game[b, layout.CURRENT]
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
        if (event & layout.EVENT_GAME_ENDED) != 0:
            over[b] = True
            if (event & layout.EVENT_TRUNCATED) != 0:
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
    with quiet_overflow():
        kernels.start_games(*state.arrays, which, streams, state.deck[:0])


# ---------------------------------------------------------------- the batched core


class LearnerGames:
    """``N`` games, one learner seat each; the opponents move in batch between decisions.

    All arrays are preallocated; `advance` and `start` change them in place. Their state
    goes to plain data and back with `skyjo_env.learner_state`.

    Attributes:
        options: The env options (`EnvOptions`); ``rules``, ``episode``,
            ``illegal_action`` and ``illegal_penalty`` are its fields.
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
        options: EnvOptions,
        num_games: int,
        opponents: Opponents,
        rng: np.random.Generator | None = None,
    ):
        """Allocate the games (none started: call `start`).

        Args:
            options: The rules, episode mode and illegal-action policy (its
                ``render_mode`` is the view's business).
            num_games: ``N >= 1``.
            opponents: See `set_opponents`.
            rng: The env's generator, handed to an opponent chooser (see `set_opponents`).

        Raises:
            ValueError: ``options`` is not an `EnvOptions`, or bad opponents.
        """
        if not isinstance(options, EnvOptions):
            raise ValueError(f"options must be an EnvOptions, got {type(options).__name__}")
        self.options = options
        rules = self.rules = options.rules
        self.episode = options.episode
        self.illegal_action = options.illegal_action
        self.illegal_penalty = options.illegal_penalty
        self._game_bonus = options.game_bonus
        self._penalize = options.penalize
        run_rules = options.engine_rules
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
        self._feature_keys: list[Any] = []
        self._acting_keys: list[Any] = []
        self.failure: str | None = None
        self.set_opponents(opponents, rng)

    # -------------------------------------------------------------- opponents

    def _register(self, agent: Any) -> int:
        # keyed by identity; the agents list keeps every registered agent alive, so an id
        # found here is that agent, already checked (a chooser hands the same agents back
        # at every game start, and the protocol checks are slow)
        index = self._index_of.get(id(agent))
        if index is not None:
            return index
        if not isinstance(agent, Agent):
            raise ValueError(
                f"an opponent must follow the Agent protocol (name, act(observations, "
                f"action_masks)), got {type(agent).__name__}"
            )
        check_sharing_offers(agent)
        index = self._index_of[id(agent)] = len(self._agents)
        self._agents.append(agent)
        return index

    def _seat_indices(self, choice: Any) -> np.ndarray:
        """Registry indices (P-1,) for one game's opponents, relative seat order."""
        others = self.num_players - 1
        # a plain list or tuple (what choosers return) has no act: no slow protocol check
        plain_sequence = type(choice) in (list, tuple)
        if not plain_sequence and (id(choice) in self._index_of or isinstance(choice, Agent)):
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
        self._feature_keys = [_features_key(agent) for agent in self._agents]
        self._acting_keys = [_acting_key(agent) for agent in self._agents]

    @property
    def opponents(self) -> list[Agent]:
        """The distinct opponent agents in use."""
        return list(self._agents)

    @property
    def opponent_assignment(self) -> np.ndarray:
        """int64 (N, max(1, P-1)): each game's opponent per seat after the learner, an index
        into `opponents` (a read-only view)."""
        view = self._assignment.view()
        view.flags.writeable = False
        return view

    @property
    def has_chooser(self) -> bool:
        """Whether a chooser picks each new game's opponents (see `set_opponents`)."""
        return self._chooser is not None

    def restore_opponents(self, agents: Sequence[Agent], assignment: np.ndarray,
                          keep_chooser: bool) -> None:
        """Put back opponents saved as data (`skyjo_env.learner_state.import_games`).

        Args:
            agents: The opponent agents; the same agent may appear more than once.
            assignment: int (N, max(1, P-1)), indices into ``agents`` (checked by the
                caller), as `opponent_assignment`.
            keep_chooser: Keep the chooser set on these games for the games started from
                now on; False drops it.
        """
        # one registry entry per distinct agent, as `_register` keeps it
        index_of: dict[int, int] = {}
        unique: list[Agent] = []
        remap = np.empty(len(agents), np.int64)
        for i, agent in enumerate(agents):
            if id(agent) not in index_of:
                index_of[id(agent)] = len(unique)
                unique.append(agent)
            remap[i] = index_of[id(agent)]
        self._assignment[...] = remap[assignment]
        self._agents, self._index_of = unique, index_of
        if not keep_chooser:
            self._chooser = None
        self._agents_changed()

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
        self.failure = one_line(error)
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
        if JIT_DISABLED:  # the engine's step runs the uncompiled kernels with its errstate
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
                self._mixed_opponent_acts(games, obs, masks, self._assignment[games, relative])
            self._step(acts)

    def _mixed_opponent_acts(self, games: np.ndarray, obs: np.ndarray, masks: np.ndarray,
                             who: np.ndarray) -> None:
        """Have each agent of ``who`` (int64 (K,), each row's agent index) act for its rows
        of ``games`` (int64 (K,)), ``obs`` (float32 (K, O)) and ``masks`` (bool (K, A)):
        the agents sharing a features key from their rows of one features call over all
        their rows, those of them also sharing an acting key in one call
        (`skyjo_env.protocol.Agent`), the others from their observations.

        Raises:
            OpponentError, ValueError, IllegalActionError: As `_opponent_acts`.
        """
        present = np.unique(who)
        done: set[int] = set()
        for group in sharing_groups(present, self._feature_keys):
            in_group = np.flatnonzero(np.isin(who, group))
            group_who = who[in_group]
            features = self._group_features(group, obs[in_group])
            for acting in sharing_groups(np.asarray(group), self._acting_keys):
                rows = np.flatnonzero(np.isin(group_who, acting))
                members = np.searchsorted(acting, group_who[rows])
                self._acting_together(acting, members, games[in_group[rows]],
                                      features[rows], masks[in_group[rows]])
                done.update(acting)
            for index in group:
                if index not in done:
                    rows = np.flatnonzero(group_who == index)
                    self._opponent_acts(self._agents[index], games[in_group[rows]], None,
                                        masks[in_group[rows]], features[rows])
            done.update(group)
        for index in present:
            if int(index) not in done:
                rows = np.flatnonzero(who == index)
                self._opponent_acts(self._agents[index], games[rows], obs[rows], masks[rows])

    def _group_features(self, group: list[int], obs: np.ndarray) -> Any:
        """The shared features of ``obs`` (float32 (K, O): the rows of the agents of
        ``group``, which share a features key), computed by its first agent in one call:
        K rows, in row order.

        Raises:
            OpponentError: The shared features raised or gave another number of rows.
        """
        first = self._agents[group[0]]
        try:
            computed = shared_features(first)(obs)
            if len(computed) != len(obs):
                raise ValueError(f"{len(computed)} rows for {len(obs)} observations")
        except Exception as error:
            raise OpponentError(f"the shared features of opponent agent "
                                f"{agent_name(first)!r} raised {one_line(error)}") from error
        return computed

    def _acting_together(self, acting: list[int], members: np.ndarray, games: np.ndarray,
                         features: Any, masks: np.ndarray) -> None:
        """Ask the agents of ``acting`` (registry indices sharing features and acting keys)
        to choose in one call, through the first one's ``shared_acting``: ``members``
        (int64 (K,)) is each row's agent, an index into ``acting``; ``games`` (int64 (K,))
        the rows' games, ``features`` their shared features, ``masks`` bool (K, A).

        Raises:
            OpponentError: The call raised.
            ValueError: Its actions are not integers of shape (K,).
            IllegalActionError: One of them is illegal (naming that row's agent).
        """
        agents = [self._agents[index] for index in acting]

        def who() -> str:
            return "opponent agents " + ", ".join(repr(agent_name(agent)) for agent in agents)

        try:
            chosen = shared_acting(agents[0]).act_together(agents, members, features, masks)
        except Exception as error:
            raise OpponentError(f"{who()} acting together raised {one_line(error)}") from error
        self._file_actions(chosen, games, masks, who, lambda row: agents[members[row]])

    def _opponent_acts(self, agent: Agent, games: np.ndarray, obs: np.ndarray | None,
                       masks: np.ndarray, features: Any = None) -> None:
        """Ask ``agent`` for games ``games`` (int64 (K,)), check its int (K,) answer against
        ``masks`` (bool (K, A)) and file it under those games in ``_actions``; from
        ``features`` (its shared features' rows) when given, else from ``obs``.

        Raises:
            OpponentError: The agent raised.
            ValueError: Its actions are not integers of shape (K,).
            IllegalActionError: One of them is illegal.
        """
        try:
            if features is None:
                chosen = agent.act(obs, masks)
            else:
                chosen = agent.act_on_features(features, masks)
        except Exception as error:
            raise OpponentError(
                f"opponent agent {agent_name(agent)!r} raised {one_line(error)}"
            ) from error
        self._file_actions(chosen, games, masks, lambda: f"opponent agent {agent_name(agent)!r}",
                           lambda row: agent)

    def _file_actions(self, chosen: Any, games: np.ndarray, masks: np.ndarray,
                      who: Callable[[], str], agent_of_row: Callable[[int], Agent]) -> None:
        """Check ``chosen`` (an int (K,) answer of ``who()``, named only for an error)
        against ``masks`` (bool (K, A)) and file it under ``games`` (int64 (K,)) in
        ``_actions``.

        Raises:
            ValueError: The actions are not integers of shape (K,).
            IllegalActionError: One of them is illegal (naming ``agent_of_row(row)``).
        """
        chosen = np.asarray(chosen)
        if chosen.shape != games.shape or chosen.dtype.kind not in "iu":
            integer_actions(chosen, games.shape, f"{who()}'s actions")
        bad = scatter_opponent_actions(games, chosen, masks, self._actions)
        if bad >= 0:
            message = illegal_action_message(self.batch, int(games[bad]), int(chosen[bad]))
            raise IllegalActionError(
                f"opponent agent {agent_name(agent_of_row(bad))!r} played an {message}")

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
        with quiet_overflow():
            return next_streams(self.batch.rng, np.asarray(which, np.int64))


__all__ = [
    "EnvNeedsResetError",
    "LearnerGames",
    "OpponentError",
    "Opponents",
    "agent_name",
    "check_learner_actions",
    "check_sharing_offers",
    "collect_events",
    "gather_opponent_views",
    "learner_masks",
    "next_streams",
    "observe_games",
    "opponent_seed",
    "start_from_streams",
]
