"""Resume state I/O of the batched learner core: `LearnerGames` as plain data and back.

`export_games` gives everything the future of a `skyjo_env.learner_games.LearnerGames`
depends on as a JSON-able dict and named numpy arrays (no pickles); `import_games` checks
such a state completely before it changes anything, then continues from it. The env views
(`skyjo_env.vec_env.SkyjoVecEnv`, `skyjo_env.single_agent.SkyjoGymEnv`) wrap these in
their own ``export_state``/``import_state`` with the helpers below, which also name their
default random opponent (`DEFAULT_OPPONENT_KEY`) and restore generators. Training
checkpoints (``--resume``) hold such states, so the format is versioned (`STATE_VERSION`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from skyjo_env.core import layout
from skyjo_env.core.actions import Phase
from skyjo_env.core.engine import BatchState
from skyjo_env.learner_games import LearnerGames, agent_name, check_sharing_offers, learner_masks
from skyjo_env.protocol import Agent

_GAME_OVER = int(Phase.GAME_OVER)

#: The `BatchState` arrays `export_games` saves (``params`` and ``deck``
#: follow from the rules).
STATE_BATCH_FIELDS = ("grid", "slot_state", "draw_pile", "discard_pile", "game", "seat", "rng",
                      "final_grid", "final_slot_state")
#: The per-game `LearnerGames` arrays it saves beside them.
STATE_GAMES_FIELDS = ("learner_seat", "rewards", "terminated", "truncated", "over", "masks")
#: Version of the `export_games` format.
STATE_VERSION = 1


def _checked_arrays(arrays: Any, shapes: dict[str, tuple[tuple[int, ...], np.dtype]]
                    ) -> dict[str, np.ndarray]:
    """C-contiguous writable copies of ``arrays[name]`` for every name in ``shapes``.

    Raises:
        ValueError: ``arrays`` is not a mapping, or an array is missing or not a numpy array
            of the shape and dtype ``shapes`` gives (naming it).
    """
    if not isinstance(arrays, Mapping):
        raise ValueError(f"state arrays must be a mapping of name -> array, got "
                         f"{type(arrays).__name__}")
    checked = {}
    for name, (shape, dtype) in shapes.items():
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
        states = arrays[name]
        require((states >= layout.HIDDEN) & (states <= layout.CLEARED), name, "the slot states")
    require((game[:, layout.PHASE] >= 0) & (game[:, layout.PHASE] <= _GAME_OVER), "batch_game",
            "the phases (column PHASE)")
    for column, low, label in ((layout.CURRENT, 0, "CURRENT"), (layout.STARTER, 0, "STARTER"),
                               (layout.FINISHER, -1, "FINISHER"),
                               (layout.PREV_FINISHER, -1, "PREV_FINISHER")):
        require((game[:, column] >= low) & (game[:, column] < players), "batch_game",
                f"{low} .. {players - 1} (column {label})")
    for column, label in ((layout.ROUND, "ROUND"), (layout.TURN, "TURN"),
                          (layout.REVEALS_DONE, "REVEALS_DONE"),
                          (layout.DECISIONS, "DECISIONS"), (layout.DRAW_SIZE, "DRAW_SIZE"),
                          (layout.DISCARD_SIZE, "DISCARD_SIZE")):
        require(game[:, column] >= 0, "batch_game", f"0 .. (column {label})")
    require(game[:, layout.DRAW_SIZE] + game[:, layout.DISCARD_SIZE] <= deck_size, "batch_game",
            f"0 .. {deck_size} cards in the two piles (columns DRAW_SIZE, DISCARD_SIZE)")
    require((game[:, layout.TRUNCATED] == 0) | (game[:, layout.TRUNCATED] == 1), "batch_game",
            "0 .. 1 (column TRUNCATED)")
    cards = batch.rules.card_values
    in_deck = "the deck's card values"
    holding = np.isin(game[:, layout.PHASE], (int(Phase.PLACE_DRAWN), int(Phase.PLACE_DISCARD)))
    require(np.isin(game[holding, layout.HELD], cards), "batch_game", f"{in_deck} (column HELD)")
    for values, states in (("batch_grid", "batch_slot_state"),
                           ("batch_final_grid", "batch_final_slot_state")):
        live = arrays[states] != layout.CLEARED
        require(np.isin(arrays[values][live], cards), values, f"{in_deck} (uncleared slots)")
    positions = np.arange(deck_size)
    for pile, column in (("batch_draw_pile", layout.DRAW_SIZE),
                         ("batch_discard_pile", layout.DISCARD_SIZE)):
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
    """The ``agent_key`` an env view passes to `export_games`: its own
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
    """The ``agent_for_key`` an env view passes to `import_games`, the
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


def check_generator_state(state: Any, name: str) -> None:
    """Raise unless ``state`` is a PCG64 ``bit_generator.state``: ``{"bit_generator":
    "PCG64", "state": {"state": int, "inc": int}, "has_uint32": 0 or 1, "uinteger": int}``,
    the two 128-bit numbers in ``0 .. 2**128 - 1`` and ``uinteger`` in ``0 .. 2**32 - 1``
    (numpy's setter takes wider ints and fails with an ``OverflowError``).

    Raises:
        ValueError: Naming the meta entry ``name`` and the part that is wrong.
    """
    def word(value: Any, bits: int) -> bool:
        return type(value) is int and 0 <= value < 1 << bits

    inner = state.get("state") if isinstance(state, dict) else None
    if not isinstance(state, dict) or state.get("bit_generator") != "PCG64":
        problem = "its bit_generator is not 'PCG64'"
    elif not isinstance(inner, dict) or not (word(inner.get("state"), 128)
                                             and word(inner.get("inc"), 128)):
        problem = "'state' must hold 'state' and 'inc', ints in 0 .. 2**128 - 1"
    elif state.get("has_uint32") not in (0, 1) or type(state.get("has_uint32")) is not int:
        problem = "'has_uint32' must be 0 or 1"
    elif not word(state.get("uinteger"), 32):
        problem = "'uinteger' must be an int in 0 .. 2**32 - 1"
    else:
        return
    raise ValueError(f"state meta {name!r} is not a PCG64 generator state ({problem})")


def generator_from_state(state: Any, name: str) -> np.random.Generator:
    """A PCG64 generator in ``state`` (a ``bit_generator.state`` dict,
    `check_generator_state`).

    Raises:
        ValueError: ``state`` is not a PCG64 state (naming the meta entry ``name``).
    """
    check_generator_state(state, name)
    generator = np.random.default_rng()
    try:
        generator.bit_generator.state = state
    except (TypeError, ValueError, KeyError, OverflowError) as error:
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


def state_layout(games: LearnerGames) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Name -> (shape, dtype) of every array `export_games` writes for ``games``."""
    shapes = {f"batch_{name}": (getattr(games.batch, name).shape,
                                getattr(games.batch, name).dtype)
              for name in STATE_BATCH_FIELDS}
    shapes.update({f"games_{name}": (getattr(games, name).shape, getattr(games, name).dtype)
                   for name in STATE_GAMES_FIELDS})
    assignment = games.opponent_assignment
    shapes["games_assignment"] = (assignment.shape, assignment.dtype)
    return shapes


def games_settings(games: LearnerGames) -> dict[str, Any]:
    """What an imported state must have been exported under (JSON-normalised)."""
    return json.loads(json.dumps({
        "num_games": games.num_games,
        "rules": games.rules.to_dict(),
        "episode": games.episode,
        "illegal_action": games.illegal_action,
        "illegal_penalty": games.illegal_penalty,
    }))


def export_games(games: LearnerGames, agent_key: Callable[[Agent], str]
                 ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Everything the future of ``games`` depends on, as plain data (no pickles).

    Not included: the opponent agents themselves (named by ``agent_key``; their own
    state, e.g. a generator, is the caller's to save) and a chooser (see `import_games`).

    Args:
        games: The games to export.
        agent_key: Gives each opponent agent in use a name (distinct agents, distinct
            names) that `import_games`'s ``agent_for_key`` turns back into an agent.

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
    for agent in games.opponents:
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
        **games_settings(games),
        "opponents": keys,
        "chooser": games.has_chooser,
        "failure": games.failure,
    }
    arrays = {f"batch_{name}": getattr(games.batch, name).copy() for name in STATE_BATCH_FIELDS}
    arrays.update({f"games_{name}": getattr(games, name).copy() for name in STATE_GAMES_FIELDS})
    arrays["games_assignment"] = games.opponent_assignment.copy()
    return meta, arrays


def import_games(games: LearnerGames, meta: dict[str, Any], arrays: dict[str, np.ndarray],
                 agent_for_key: Callable[[str], Agent]) -> None:
    """Continue ``games`` from an `export_games` of games built with the same settings.

    Everything is checked before anything changes: a refused state leaves ``games`` as
    they were. Opponents exported under a chooser keep the chooser of ``games`` for the
    games started from now on (they must have one: a callable is not data).

    Args:
        games: The games to continue (changed in place).
        meta: The JSON part of `export_games` (may have been through ``json``).
        arrays: Its arrays, by name, of exactly the exported shapes and dtypes.
        agent_for_key: Returns the agent for each name in ``meta["opponents"]``.

    Raises:
        ValueError: One line naming what is wrong: a missing or different meta entry
            (version, rules, number of games, episode options), a missing array, one of
            the wrong type, shape or dtype, values the engine cannot hold (a seat, slot
            state, phase, pile size or card outside its range), masks that are not the
            games' legal actions, or a name ``agent_for_key`` did not turn into an agent
            (or turned into one offering shared features or acting it cannot use).
    """
    if not isinstance(meta, dict):
        raise ValueError(f"state meta must be a dict, got {type(meta).__name__}")
    if meta.get("version") != STATE_VERSION:
        raise ValueError(f"state meta 'version' is {meta.get('version')!r}; this "
                         f"LearnerGames imports version {STATE_VERSION}")
    for name, value in games_settings(games).items():
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
    if chooser and not games.has_chooser:
        raise ValueError("the state was exported with an opponent chooser: give these "
                         "games the same chooser (set_opponents) before importing it")
    if failure is not None and not isinstance(failure, str):
        raise ValueError(f"state meta 'failure' must be None or a str, got {failure!r}")
    new = _checked_arrays(arrays, state_layout(games))
    _check_state_values(new, games.batch, len(keys))
    masks = np.empty_like(new["games_masks"])
    if failure is None:
        learner_masks(new["batch_slot_state"], new["batch_game"], games.batch.params,
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
        # as at registration: the games look restored agents up without checking again
        check_sharing_offers(agent)
        agents.append(agent)
    # in place: the compiled helpers' argument tuples hold these very arrays
    for name in STATE_BATCH_FIELDS:
        getattr(games.batch, name)[...] = new[f"batch_{name}"]
    for name in STATE_GAMES_FIELDS:
        getattr(games, name)[...] = new[f"games_{name}"]
    games.restore_opponents(agents, new["games_assignment"], keep_chooser=chooser)
    games.failure = failure


__all__ = [
    "DEFAULT_OPPONENT_KEY",
    "STATE_BATCH_FIELDS",
    "STATE_GAMES_FIELDS",
    "STATE_VERSION",
    "check_generator_state",
    "export_games",
    "exported_opponent_key",
    "games_settings",
    "generator_from_state",
    "import_games",
    "imported_opponent_agent",
    "require_meta_entries",
    "state_layout",
]
