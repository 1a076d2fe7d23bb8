"""Expert iteration: distil decision-time search into the PPO network during training.

Every ``expert_interval`` learner decisions (`agents.training.trainer.Trainer.expert_iteration`),
the search agent over the *current* policy (``search(...):ppo:<the policy now>``, see
`agents.search`) plays ``expert_games`` full games in every seat. The actor is then fitted
to the searched moves (masked cross-entropy) and the critic to the outcomes those games
had for the acting seat (the return under the training reward, minus the shaping
potential the critic also learns under), and PPO continues from the improved network.
Search is a policy-improvement operator: its moves are better than the policy's own when
the search works, so each step moves the network towards them (Anthony et al., 2017,
"Thinking fast and slow with deep learning and tree search").

The games come in chunks of `EXPERT_CHUNK_GAMES`, seeded from root seeds and the chunk index
alone, so the data is the same in this process or on any number of Ray workers
(`agents.training.imitation.run_chunks`).

With a soft temperature (``skyjo-distill --soft-temperature``, ``expert_soft_temperature``)
the actor is fitted instead to `soft_search_targets`: the search's action values (its mean
rollout value of each action it tried, recorded as it played: `SearchGames`), not only its
picks, so a near tie moves the target a little and a clear edge a lot
(`experiments/soft_distill.py` compared the two; docs/results.md).

`research_positions` searches the decisions of saved games again with another search (e.g.
one valuing its leaves with a value function fitted on the search's own games,
``search(critic=PATH)``), so a network can be fitted to a better search's moves without
playing new games (``skyjo-distill --games-from FILE --research``).
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np

from agents.atomic import atomic_path
from agents.registry import make_agent
from agents.search.agent import ActionValues
from agents.training.imitation import (
    RecordedGames,
    chunk_seed,
    chunk_sizes,
    fit_critic,
    record_games,
    run_chunks,
)
from skyjo_env.core import num_actions
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationLayout
from skyjo_env.rewards import grid_potential

#: Games per chunk of search games: small, because a searched game costs about a second.
EXPERT_CHUNK_GAMES = 16
#: Minibatch of the fit: a step's few thousand decisions still give dozens of updates.
EXPERT_BATCH_SIZE = 256
#: Decisions per chunk of `research_positions`: a Ray task long enough to be worth sending,
#: short enough to spread over the workers.
RESEARCH_CHUNK_ROWS = 1024
#: Format tag of a saved games file (`save_recorded_games`).
GAMES_FORMAT = "skyjo-rl-expert-games/1"


#: Names of the search's action values in a saved games file.
_VALUE_ARRAYS = {"means": "value_means", "errors": "value_errors", "base_actions": "value_base"}


class GamesFileError(ValueError):
    """A saved games file that is missing, unreadable, or does not fit the network."""


class SearchGames(NamedTuple):
    """Search self-play games, with what the search measured at each decision.

    Attributes:
        played: Every decision (`agents.training.imitation.RecordedGames`, N rows).
        values: The search's `agents.search.ActionValues` of the same N decisions
            (`agents.search.SearchAgent.act_with_values`), means and errors as float32;
            NaN and base action -1 in the rows the search did not decide (setup reveals,
            forced moves).
    """

    played: RecordedGames
    values: ActionValues


class _RecordingSearch:
    """Plays as a search agent and keeps the `ActionValues` of each call, in call order.

    As the only teacher of `agents.training.imitation.record_games` it is asked for exactly the
    decisions recorded at each step, in their order, so the parts line up with the rows.
    """

    def __init__(self, search) -> None:
        self.search = search
        self.name = search.name
        self.parts: list[ActionValues] = []

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        actions, values = self.search.act_with_values(observations, action_masks)
        self.parts.append(_compact(values))
        return actions


def _compact(values: ActionValues) -> ActionValues:
    """Means and errors as float32 (half the memory; far finer than their noise)."""
    return ActionValues(values.means.astype(np.float32, copy=False),
                        values.errors.astype(np.float32, copy=False),
                        np.asarray(values.base_actions, np.int64))


def _concatenated(parts):
    """One NamedTuple of arrays from several of the same type, row blocks in order."""
    return type(parts[0])(*(np.concatenate(arrays) for arrays in zip(*parts, strict=True)))


def teacher_spec(search: str, policy_path: str) -> str:
    """The agent spec of the search over a saved policy: ``"<search>:ppo:<policy_path>"``."""
    return f"{search}:ppo:{policy_path}"


def expert_chunk(
    rules: SkyjoRules, spec: str, seed: int, teacher_seed: int, gamma: float, chunk: int,
    games: int,
) -> SearchGames:
    """Chunk ``chunk`` of the search games: ``games`` (>= 1) games dealt from
    ``chunk_seed(seed, chunk)``, every seat played by one ``spec`` agent (a search) built
    with ``chunk_seed(teacher_seed, chunk)`` (self-contained, so it runs as a Ray task)."""
    teacher = _RecordingSearch(make_agent(spec, rules, seed=chunk_seed(teacher_seed, chunk)))
    played = record_games(
        rules, [teacher], games, chunk_seed(seed, chunk), batch=max(games, 1), gamma=gamma
    )
    values = _concatenated(teacher.parts)
    if len(values.base_actions) != len(played.actions):
        raise RuntimeError(f"recorded {len(values.base_actions)} search values for "
                           f"{len(played.actions)} decisions")
    return SearchGames(played, values)


def collect_expert_games(
    rules: SkyjoRules,
    spec: str,
    games: int,
    seed: int,
    teacher_seed: int,
    gamma: float = 1.0,
    workers: int = 0,
    ray_address: str | None = None,
    should_stop: Callable[[], bool] | None = None,
    chunk_games: int = EXPERT_CHUNK_GAMES,
    on_chunk_done: Callable[[int], None] | None = None,
) -> SearchGames:
    """Every decision of ``games`` self-play games of the search ``spec``, chunk by chunk,
    with the search's action values.

    Args:
        rules: The rules to play.
        spec: The search's spec (`teacher_spec`; a `agents.search.SearchAgent`); its
            ``ppo:PATH`` must be readable by every worker.
        games: Games in all (>= 1).
        seed: Root seed of the deals. teacher_seed: root seed of the agents.
        gamma: Discount per decision of the acting seat, for the returns.
        workers, ray_address: Where the chunks run (`agents.training.imitation.run_chunks`).
        should_stop: Asked between chunks; True abandons the games (`ChunksStopped`).
        chunk_games: Games per chunk (changes the data; keep the default).
        on_chunk_done: Called with a chunk's games as each chunk ends (a progress bar).

    Returns:
        `SearchGames` of all chunks, in chunk order.
    """
    task = partial(expert_chunk, rules, spec, seed, teacher_seed, gamma)
    parts = run_chunks(task, chunk_sizes(games, chunk_games), workers, ray_address, should_stop,
                       on_chunk_done)
    return SearchGames(_concatenated([part.played for part in parts]),
                       _concatenated([part.values for part in parts]))


def research_chunk(
    rules: SkyjoRules, spec: str, seed: int, observations: np.ndarray, masks: np.ndarray,
    chunk_rows: int, chunk: int, rows: int,
) -> tuple[np.ndarray, ActionValues]:
    """Chunk ``chunk`` of `research_positions`: its ``rows`` decisions (from row ``chunk *
    chunk_rows`` of ``observations`` float32 (N, O) / ``masks`` bool (N, A)) searched by a
    ``spec`` agent built with ``chunk_seed(seed, chunk)``; returns its moves (int64
    (rows,)) and `ActionValues` (self-contained, so it runs as a Ray task)."""
    start = chunk * chunk_rows
    agent = make_agent(spec, rules, seed=chunk_seed(seed, chunk))
    actions, values = agent.act_with_values(observations[start:start + rows],
                                            masks[start:start + rows])
    return actions, _compact(values)


def research_positions(
    rules: SkyjoRules,
    spec: str,
    games: SearchGames,
    seed: int,
    workers: int = 0,
    ray_address: str | None = None,
    on_rows_done: Callable[[int], None] | None = None,
    chunk_rows: int = RESEARCH_CHUNK_ROWS,
) -> SearchGames:
    """The decisions of ``games`` that their search decided, searched again by ``spec``.

    A search decides from what the seat sees (the observation) alone, so a saved
    decision can be searched again without its game. The rows the first search did not
    decide (setup reveals, forced moves: base action -1) keep their move and values.

    Args:
        rules: The rules the games were played under.
        spec: The new search, with its base (`teacher_spec`).
        games: Saved search games (`load_recorded_games`), with their action values.
        seed: Root seed of the new search's agents (one per chunk of ``chunk_rows``
            decisions: the same result for any ``workers``).
        workers, ray_address: Where the chunks run (`agents.training.imitation.run_chunks`).
        on_rows_done: Called with a chunk's decisions as each chunk ends (a progress bar).
        chunk_rows: Decisions per chunk (changes the result: keep the default).

    Returns:
        `SearchGames` of the same N decisions: ``played`` with the new search's moves in
        the searched rows (observations, masks and returns unchanged: the outcomes stay
        those of the games as played), ``values`` the new search's.
    """
    searched = np.flatnonzero(games.values.base_actions >= 0)
    observations = games.played.observations[searched]
    masks = games.played.masks[searched]
    task = partial(research_chunk, rules, spec, seed, observations, masks, chunk_rows)
    parts = run_chunks(task, chunk_sizes(len(searched), chunk_rows), workers,
                       ray_address, on_chunk_done=on_rows_done)
    actions = games.played.actions.copy()
    means, errors = games.values.means.copy(), games.values.errors.copy()
    base_actions = games.values.base_actions.copy()
    if parts:
        actions[searched] = np.concatenate([part[0] for part in parts])
        new = _concatenated([part[1] for part in parts])
        means[searched], errors[searched] = new.means, new.errors
        base_actions[searched] = new.base_actions
    return SearchGames(games.played._replace(actions=actions),
                       ActionValues(means, errors, base_actions))


def searched_rows(path: str | Path) -> int:
    """How many decisions of a saved games file its search decided (0 without values);
    for a progress bar before `load_recorded_games` checks the file.

    Raises:
        GamesFileError: Not a readable games file.
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            key = _VALUE_ARRAYS["base_actions"]
            return int((data[key] >= 0).sum()) if key in data.files else 0
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        raise _unreadable(path, error) from error


def _unreadable(path: str | Path, error: Exception) -> GamesFileError:
    return GamesFileError(
        f"games file {str(path)!r} is not a readable skyjo-distill games file: {error}")


def save_recorded_games(
    played: RecordedGames, path: str | Path, info: dict, values: ActionValues | None = None
) -> None:
    """Write search games to ``path`` (a compressed ``.npz`` of plain arrays, no pickles),
    atomically, with ``info`` (JSON-able provenance: search, source, seed, games) and, when
    given, the search's action values of every decision (as `SearchGames.values`)."""
    header = json.dumps({"format": GAMES_FORMAT, **info})
    arrays = played._asdict()
    if values is not None:
        arrays.update({_VALUE_ARRAYS[name]: array
                       for name, array in _compact(values)._asdict().items()})
    with atomic_path(path, suffix=".npz") as temporary:
        np.savez_compressed(temporary, info=np.array(header), **arrays)


def load_recorded_games(
    path: str | Path, observation_size: int, num_actions: int
) -> tuple[RecordedGames, dict, ActionValues | None]:
    """Read a file of `save_recorded_games` and check it before anything trusts it.

    Args:
        path: The ``.npz`` file.
        observation_size: O, the observation width of the network to fit.
        num_actions: A, its number of actions.

    Returns:
        The games (observations float32 (N, O), masks bool (N, A), actions int64 (N,),
        returns float64 (N,)), their provenance (``info`` of the save), and the search's
        action values (means and errors float32 (N, A), base actions int64 (N,)), or None
        in a file saved without them.

    Raises:
        GamesFileError: No such file, not such a file (corrupt, truncated, another
            format), or arrays of the wrong shape or dtype, actions outside their masks,
            returns that are not finite, or action values that do not fit the decisions;
            the message names the file and the problem.
    """
    path = Path(path)
    if not path.is_file():
        raise GamesFileError(f"games file {str(path)!r} is not a file")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in ("info", *RecordedGames._fields)}
            saved_values = ({name: data[key] for name, key in _VALUE_ARRAYS.items()}
                            if _VALUE_ARRAYS["means"] in data.files else None)
        info = json.loads(str(arrays.pop("info")))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
        raise _unreadable(path, error) from error
    if not isinstance(info, dict) or info.get("format") != GAMES_FORMAT:
        raise GamesFileError(f"games file {str(path)!r} is not in format {GAMES_FORMAT}")
    played = RecordedGames(**arrays)
    rows = played.actions.shape[0] if played.actions.ndim == 1 else -1
    expected = {
        "observations": ((rows, observation_size), np.float32),
        "masks": ((rows, num_actions), np.bool_),
        "actions": ((rows,), np.int64),
        "returns": ((rows,), np.float64),
    }
    for name, (shape, dtype) in expected.items():
        array = getattr(played, name)
        if array.shape != shape or array.dtype != dtype:
            raise GamesFileError(
                f"games file {str(path)!r}: {name} is {array.dtype} {array.shape}, the network "
                f"needs {np.dtype(dtype)} {shape}"
            )
    if rows and (played.actions.min() < 0 or played.actions.max() >= num_actions
                 or not played.masks[np.arange(rows), played.actions].all()):
        raise GamesFileError(f"games file {str(path)!r}: an action outside its legal mask")
    if not np.isfinite(played.returns).all():
        raise GamesFileError(f"games file {str(path)!r}: returns that are not finite")
    values = None if saved_values is None else _checked_values(
        ActionValues(**saved_values), played.masks, str(path))
    return played, info, values


def _checked_values(values: ActionValues, masks: np.ndarray, where: str) -> ActionValues:
    """``values`` if they fit decisions with legal masks bool (N, A), else a
    `GamesFileError` (naming ``where``) that says how they do not."""
    rows, width = masks.shape
    for name in ("means", "errors"):
        array = getattr(values, name)
        if array.shape != (rows, width) or array.dtype != np.float32:
            raise GamesFileError(f"games file {where!r}: search value {name} are {array.dtype} "
                                 f"{array.shape}, the games need float32 {(rows, width)}")
    base = values.base_actions
    if base.shape != (rows,) or base.dtype != np.int64:
        raise GamesFileError(f"games file {where!r}: search base actions are {base.dtype} "
                             f"{base.shape}, the games need int64 {(rows,)}")
    searched = np.flatnonzero(base >= 0)
    if rows and (base.max() >= width or base.min() < -1
                 or not masks[searched, base[searched]].all()
                 or not np.isfinite(values.means[searched, base[searched]]).all()):
        raise GamesFileError(f"games file {where!r}: a search base action that is not a "
                             "legal, valued action of its decision")
    return values


def value_targets(
    played: RecordedGames, layout: ObservationLayout, shaping: float
) -> np.ndarray:
    """What the critic should predict for each recorded decision: float64 (N,).

    With potential-based shaping of weight ``w`` (`agents.training.shaping`, ``Phi`` = 0 after
    the episode), the shaped return telescopes to the plain return minus ``w * Phi(s)``,
    for any gamma; the critic of a shaped run learns that, so it is the target here.
    """
    if shaping == 0:
        return played.returns.copy()
    return played.returns - shaping * grid_potential(played.observations, layout)


def critic_targets(
    played: RecordedGames, values: ActionValues | None, layout: ObservationLayout,
    shaping: float, mix: float,
) -> np.ndarray:
    """Targets of a value function of the searching policy: float64 (N,).

    ``mix * outcome + (1 - mix) * estimate`` per decision, where the outcome is the game's
    return from there (`value_targets`) and the estimate is the search's own mean rollout
    value of the move it played (`SearchGames.values`), less the same shaping potential
    (the critic learns the shaped value). Decisions the search did not value (setup
    reveals, forced moves) take the outcome alone. The outcome is unbiased but carries all
    the luck of the rest of the game; the estimate averages many rollouts but inherits
    the base network's play and critic: the mix trades one against the other.

    Args:
        played: The search's games. values: Its action values of the same decisions
            (None only with ``mix`` = 1).
        layout: Their observation layout. shaping: The critic's shaping weight.
        mix: Weight of the outcome, in [0, 1].

    Raises:
        ValueError: ``mix`` outside [0, 1], or no ``values`` with ``mix`` < 1.
    """
    if not 0.0 <= mix <= 1.0:
        raise ValueError(f"value mix must be in [0, 1], got {mix!r}")
    outcome = value_targets(played, layout, shaping)
    if mix == 1.0:
        return outcome
    if values is None:
        raise ValueError("a value mix below 1 needs the search's action values of the games")
    rows = np.arange(len(played.actions))
    estimate = values.means[rows, played.actions].astype(np.float64)
    valued = (values.base_actions >= 0) & np.isfinite(estimate)
    # the same potential as the outcome's: value_targets already took it off the returns
    estimate = estimate + (outcome - played.returns)
    return np.where(valued, mix * outcome + (1.0 - mix) * estimate, outcome)


def fit_to_search(
    policy,
    played: RecordedGames,
    layout: ObservationLayout,
    epochs: int,
    learning_rate: float,
    anchor: float,
    seed: int,
    shaping: float | None = None,
    values: ActionValues | None = None,
    soft_temperature: float | None = None,
) -> dict[str, float]:
    """Fit a policy to recorded search games; the step both expert-iteration paths share.

    Hard targets (the default) fit every decision's searched move, mixed with the policy's
    own probabilities by ``anchor``. With ``soft_temperature`` the actor is fitted instead
    to `soft_search_targets` of the decisions the search decided (``anchor`` unused: the
    prior is in those targets already), and the critic, if fitted, on the same decisions.

    Args:
        policy: A trainable ``MaskableActorCriticPolicy`` (changed in place).
        played: The search's games (`collect_expert_games`).
        layout: Their observation layout (for the shaping potential).
        epochs, learning_rate, anchor, seed: The fit (`agents.training.imitation.clone_policy`).
        shaping: None leaves the critic alone; a number fits it to the games' returns
            with that shaping weight (`value_targets`).
        values: The search's action values of the same decisions (`SearchGames.values`);
            needed with ``soft_temperature``.
        soft_temperature: None for hard targets, else the temperature of the soft ones.

    Returns:
        ``{"agreement_before", "agreement_after", "loss", "decisions", "fitted"}``
        (agreement: share of the searched moves the greedy policy plays, before and after
        the fit; fitted: the decisions fitted), plus ``"value_loss"`` when the critic is
        fitted.

    Raises:
        ValueError: ``soft_temperature`` without ``values``, or not a number > 0.
    """
    from agents.ppo.policy import PPOAgent
    from agents.training.imitation import clone_policy

    actor = PPOAgent(policy)
    before = agreement(actor.act(played.observations, played.masks), played.actions)
    rows = slice(None)  # every decision, as views of the arrays
    targets = None
    if soft_temperature is not None:
        if values is None:
            raise ValueError("soft targets need the search's action values of the games")
        rows = np.flatnonzero(values.base_actions >= 0)
        searched = ActionValues(*(part[rows] for part in values))
        targets, _ = policy_soft_targets(policy, played.observations[rows], played.masks[rows],
                                         searched, soft_temperature)
    critic = None if shaping is None else value_targets(played, layout, shaping)[rows]
    fit = clone_policy(
        policy, played.observations[rows], played.masks[rows],
        played.actions[rows] if targets is None else targets.argmax(axis=1), epochs,
        batch_size=EXPERT_BATCH_SIZE, learning_rate=learning_rate, seed=seed,
        value_targets=critic, anchor=anchor if targets is None else 0.0,
        target_probabilities=targets,
    )
    after = agreement(actor.act(played.observations, played.masks), played.actions)
    return {"agreement_before": before, "agreement_after": after, "loss": fit["loss"],
            **({"value_loss": fit["value_loss"]} if "value_loss" in fit else {}),
            "decisions": float(len(played.actions)),
            "fitted": float(played.actions[rows].size)}


def _check_temperature(temperature: float, name: str) -> None:
    """A `ValueError` naming ``name`` unless ``temperature`` is a finite number > 0."""
    if not (np.isfinite(temperature) and temperature > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {temperature!r}")


def policy_soft_targets(
    policy,
    observations: np.ndarray,
    masks: np.ndarray,
    values: ActionValues,
    temperature: float,
    shrink: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """`soft_search_targets` of searched decisions with a policy's own probabilities as
    the prior (what a soft fit of that policy aims at).

    Args:
        policy: A ``MaskableActorCriticPolicy``.
        observations: float32 (R, O), decisions the search decided.
        masks: bool (R, A), their legal actions.
        values: The search's `ActionValues` of the same R decisions.
        temperature, shrink: As `soft_search_targets`.

    Returns:
        The targets and the prior, both float64 (R, A).

    Raises:
        ValueError: As `soft_search_targets`.
    """
    import torch

    from agents.training.imitation import action_probabilities

    prior = action_probabilities(policy, torch.as_tensor(observations),
                                 torch.as_tensor(masks)).double().numpy()
    targets = soft_search_targets(prior, values.means, values.errors, values.base_actions,
                                  masks, temperature, shrink)
    return targets, prior


def soft_search_targets(
    prior: np.ndarray,
    means: np.ndarray,
    errors: np.ndarray,
    base_actions: np.ndarray,
    masks: np.ndarray,
    temperature: float,
    shrink: bool = False,
) -> np.ndarray:
    """Target distributions that move a policy towards the search's action values.

    ``target(a) ~ prior(a) * exp(advantage(a) / temperature)``, the advantage being an
    action's mean rollout value minus that of the base agent's choice (reward units: 0.01
    = one point of margin). Actions the search did not try get the lowest advantage of
    those it tried. With ``shrink``, each advantage ``d`` with standard error ``e`` is
    scaled by ``d^2 / (d^2 + e^2)``, so differences within their noise barely move the
    target. Unlike the search's pick (a hard label), this keeps the size of its evidence.

    Args:
        prior: float (R, A), the policy's own masked probabilities.
        means, errors, base_actions: The search's evidence (`agents.search.ActionValues`):
            float (R, A) with NaN where not tried, and int64 (R,).
        masks: bool (R, A), the legal actions.
        temperature: > 0; smaller moves further from the prior.
        shrink: Shrink noisy advantages as above.

    Returns:
        float64 (R, A), rows summing to 1, zero on illegal actions.

    Raises:
        ValueError: A temperature that is not a positive finite number.
    """
    _check_temperature(temperature, "temperature")
    means = np.asarray(means, np.float64)
    advantage = means - means[np.arange(len(base_actions)), base_actions][:, None]
    if shrink:
        squared = np.nan_to_num(np.asarray(errors, np.float64), nan=0.0) ** 2
        advantage = advantage * advantage**2 / np.maximum(advantage**2 + squared, 1e-300)
    tried = np.isfinite(advantage)
    floor = np.min(np.where(tried, advantage, np.inf), axis=1, keepdims=True)
    logits = np.where(tried, advantage, floor) / temperature
    weights = np.where(masks, np.asarray(prior, np.float64)
                       * np.exp(logits - np.max(np.where(masks, logits, -np.inf), axis=1,
                                                keepdims=True)), 0.0)
    return weights / weights.sum(axis=1, keepdims=True)


def distill_checkpoint(
    source: str | Path,
    target: str | Path,
    search: str,
    games: int,
    seed: int,
    epochs: int = 2,
    learning_rate: float = 1e-4,
    anchor: float = 0.5,
    workers: int = 0,
    ray_address: str | None = None,
    value_fit: bool = False,
    on_games_done: Callable[[int], None] | None = None,
    games_out: str | Path | None = None,
    games_in: str | Path | None = None,
    soft_temperature: float | None = None,
    critic_only: bool = False,
    value_mix: float = 0.5,
    research: bool = False,
) -> dict[str, float]:
    """One expert-iteration step on a saved network: search games over ``source``, the
    fit (anchored hard targets, or soft ones), and the result saved to ``target`` (the same
    rules and architecture).

    With ``critic_only`` the actor is kept as it is and the critic alone is fitted to
    `critic_targets` (a value function of the searching policy, for ``leaf=critic``:
    ``search:ppo:TARGET`` or ``search(critic=TARGET):ppo:SOURCE``).

    With ``value_fit`` the critic is fitted to the games' returns too (with the shaping
    weight of the checkpoint's training config). Off by default: a critic refitted on one
    step's games made a worse leaf value for the next step's search than the critic PPO
    trained (docs/results.md, "Expert iteration and distillation").

    Args:
        source: A ``skyjo-rl-ppo`` checkpoint. target: Where the new one goes.
        search: ``search(OPTIONS)`` without its base (the base is ``ppo:source``).
        games: Self-play games of the search. seed: Seeds the deals and the agents.
        epochs, learning_rate, anchor: The fit (`agents.training.imitation.clone_policy`).
        workers, ray_address: Where the games run (`collect_expert_games`).
        value_fit: Fit the critic to the games' returns as well.
        on_games_done: Called with the number of games each time a chunk of the search
            games ends (a progress bar: the games are most of a step's time).
        games_out: Also save the search games there (`save_recorded_games`), so other
            fits can reuse them.
        games_in: Fit to games saved by an earlier step instead of searching (``search``
            and ``games`` are then those of the file, recorded as ``games_from``).
        soft_temperature: Fit soft targets of this temperature (`fit_to_search`); None
            fits the searched moves.
        critic_only: Fit the critic alone (the arguments of the actor's fit unused).
        value_mix: With ``critic_only``, the weight of the outcomes in the targets.
        research: With ``games_in``, search the file's decisions again with ``search``
            over ``source`` (`research_positions`, seeded from ``seed``, on ``workers``;
            ``on_games_done`` then counts decisions) and fit to that search instead.

    Returns:
        ``{"decisions", "fitted", "agreement_before", "agreement_after", "loss"}``, plus
        ``"value_loss"`` with ``value_fit``; with ``critic_only``: ``{"decisions",
        "value_loss_before", "value_loss"}``.

    Raises:
        ValueError: A ``soft_temperature`` that is not a finite number > 0 (before any
            search).
        GamesFileError: ``games_in`` is not a games file that fits the network, or holds
            no search values and ``soft_temperature`` or ``research`` needs them.
    """
    import torch

    if soft_temperature is not None:
        _check_temperature(soft_temperature, "soft_temperature")
    if critic_only and not 0.0 <= value_mix <= 1.0:
        raise ValueError(f"value_mix must be in [0, 1], got {value_mix!r}")

    from agents.ppo.checkpoint import load_policy, read_metadata, save_checkpoint

    metadata = read_metadata(source)
    rules = SkyjoRules.from_dict(metadata["rules"])
    layout = ObservationLayout(rules)
    provenance = {"source": str(source), "search": search, "games": games, "seed": seed}
    if games_in is None:
        played, values = collect_expert_games(
            rules, teacher_spec(search, str(source)), games, seed=chunk_seed(seed, 0),
            teacher_seed=chunk_seed(seed, 1), workers=workers, ray_address=ray_address,
            on_chunk_done=on_games_done,
        )
    else:
        played, saved, values = load_recorded_games(games_in, layout.size,
                                                    num_actions(rules.num_slots))
        if values is None and (soft_temperature is not None or research
                               or (critic_only and value_mix < 1)):
            raise GamesFileError(
                f"games file {str(games_in)!r} holds no search action values (saved before "
                "they were recorded); soft targets, a value mix below 1 and --research need "
                "them: search new games"
            )
        provenance.update(search=saved.get("search"), games=saved.get("games"),
                          games_from={"path": str(games_in), **saved})
        if research:
            played, values = research_positions(
                rules, teacher_spec(search, str(source)), SearchGames(played, values),
                seed=chunk_seed(seed, 3), workers=workers, ray_address=ray_address,
                on_rows_done=on_games_done)
            provenance.update(search=search, researched=True)
    if games_out is not None:
        save_recorded_games(played, games_out, provenance, values)
    policy = load_policy(source, metadata, trainable=True)
    shaping = float((metadata.get("config") or {}).get("shaping", 0.0))
    with torch.random.fork_rng(devices=[]):
        if critic_only:
            targets = critic_targets(played, values, layout, shaping, value_mix)
            stats = {"decisions": float(len(played.actions)),
                     **fit_critic(policy, played.observations, targets, epochs,
                                  EXPERT_BATCH_SIZE, learning_rate, chunk_seed(seed, 2))}
        else:
            stats = fit_to_search(policy, played, layout, epochs, learning_rate,
                                  anchor, chunk_seed(seed, 2), shaping if value_fit else None,
                                  values, soft_temperature)
    distilled = {**provenance, "epochs": epochs, "learning_rate": learning_rate,
                 "anchor": None if soft_temperature is not None or critic_only else anchor,
                 "soft_temperature": soft_temperature, "value_fit": value_fit,
                 **({"critic_only": True, "value_mix": value_mix} if critic_only else {})}
    history = [*metadata.get("distilled", []), distilled]
    save_checkpoint(SimpleNamespace(policy=policy), target, {**metadata, "distilled": history})
    return stats


def agreement(chosen: np.ndarray, searched: np.ndarray) -> float:
    """Share of rows where ``chosen`` (int (N,)) equals ``searched`` (int (N,))."""
    return float(np.mean(np.asarray(chosen) == np.asarray(searched))) if len(chosen) else 0.0


__all__ = [
    "EXPERT_BATCH_SIZE",
    "EXPERT_CHUNK_GAMES",
    "GAMES_FORMAT",
    "GamesFileError",
    "SearchGames",
    "agreement",
    "collect_expert_games",
    "critic_targets",
    "distill_checkpoint",
    "expert_chunk",
    "fit_to_search",
    "load_recorded_games",
    "policy_soft_targets",
    "save_recorded_games",
    "soft_search_targets",
    "teacher_spec",
    "value_targets",
]
