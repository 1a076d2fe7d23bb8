"""Imitation warm start: teach the PPO policy a teacher's moves before self-play.

PPO from scratch needs many millions of decisions to learn even which slot to swap a low
card into. Cloning a heuristic first (supervised cross-entropy on the teacher's legal
choices, the teacher in every seat of batched full games) gives PPO a policy that already
plays sensibly, and the reinforcement learning then improves on it.

The demonstrations come in chunks of `DEMONSTRATION_CHUNK_GAMES` games, each dealt and
played by a teacher built inside the chunk, both seeded from root seeds and the chunk
index alone (`chunk_seed`), so the data for a seed is the same whether the chunks run in this process
(``workers=0``) or as Ray tasks on any number of workers (`run_chunks`, which any other
seeded per-chunk data generator can reuse; it runs them through `agents.parallel.run_chunks`).
Ray is imported only when ``workers > 0``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from functools import partial
from typing import NamedTuple, TypeVar

import numpy as np

from agents import parallel
from agents.parallel import ChunksStopped as ChunksStopped  # re-exported: callers catch it here
from agents.registry import make_agent
from skyjo_env.core import legal_action_mask, new_batch, reset, step
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationEncoder
from skyjo_env.protocol import Agent
from skyjo_env.rewards import seat_rewards_into


def collect_demonstrations(
    rules: SkyjoRules, teachers: Sequence[Agent], games: int, seed: int, batch: int = 1024
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every decision of ``games`` full games, seat ``p`` played by ``teachers[p % k]``.

    Returns:
        ``(observations float32 (N, O), masks bool (N, A), actions int64 (N,))``.
    """
    played = record_games(rules, teachers, games, seed, batch)
    return played.observations, played.masks, played.actions


class RecordedGames(NamedTuple):
    """Every decision of some full games, in play order (`record_games`).

    Attributes:
        observations: float32 (N, O), from the seat to act.
        masks: bool (N, A), its legal actions.
        actions: int64 (N,), the actions played.
        returns: float64 (N,), the acting seat's reward (`skyjo_env.rewards`, game-end
            placement included) from this decision to the game's end, discounted by
            ``gamma`` per decision of that seat (the learner's clock in training).
    """

    observations: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    returns: np.ndarray


def record_games(
    rules: SkyjoRules,
    teachers: Sequence[Agent],
    games: int,
    seed: int,
    batch: int = 1024,
    gamma: float = 1.0,
) -> RecordedGames:
    """Play ``games`` full games (seat ``p`` by ``teachers[p % k]``) and record every decision.

    Args:
        rules: The rules to play.
        teachers: The agents, by seat.
        games: Games in all.
        seed: Seeds the deals.
        batch: Most games stepped together.
        gamma: Discount per decision of the acting seat, for ``returns``.

    Returns:
        `RecordedGames`, batch after batch.
    """
    encoder = ObservationEncoder(rules)
    parts: list[RecordedGames] = []
    rng = np.random.default_rng(seed)
    remaining = games
    while remaining > 0:
        size = min(batch, remaining)
        remaining -= size
        parts.append(_record_batch(rules, encoder, teachers, size, rng, gamma))
    return RecordedGames(*(np.concatenate(arrays) for arrays in zip(*parts, strict=True)))


def _record_batch(
    rules: SkyjoRules,
    encoder: ObservationEncoder,
    teachers: Sequence[Agent],
    size: int,
    rng: np.random.Generator,
    gamma: float,
) -> RecordedGames:
    """`record_games` for one batch of ``size`` games dealt from ``rng``."""
    state = new_batch(rules, size)
    reset(state, rng)
    chosen = np.empty(size, np.int64)
    earned = np.zeros((size, rules.num_players))  # each seat's reward so far
    scratch = np.zeros(rules.num_players)
    observations, masks, actions, games, seats, earned_before = [], [], [], [], [], []
    while not state.all_over:
        running = ~state.game_over
        rows = np.flatnonzero(running)
        mask = legal_action_mask(state)
        seen = encoder.encode(state, state.current_player)
        chosen[:] = -1
        for index, teacher in enumerate(teachers):
            mine = np.flatnonzero(running & (state.current_player % len(teachers) == index))
            if mine.size:
                chosen[mine] = teacher.act(seen[mine], mask[mine])
        observations.append(seen[rows])
        masks.append(mask[rows])
        actions.append(chosen[rows].copy())
        games.append(rows)
        seats.append(state.current_player[rows].astype(np.int64))
        earned_before.append(earned[rows, state.current_player[rows]])
        events = step(state, chosen)
        for b in np.flatnonzero(events):
            if seat_rewards_into(int(events[b]), state.seat, int(b), True, scratch):
                earned[b] += scratch
    game_of, seat_of = np.concatenate(games), np.concatenate(seats)
    returns = _discounted_returns(
        game_of, seat_of, np.concatenate(earned_before), earned[game_of, seat_of], gamma
    )
    return RecordedGames(
        np.concatenate(observations), np.concatenate(masks), np.concatenate(actions), returns
    )


def _discounted_returns(
    game_of: np.ndarray,
    seat_of: np.ndarray,
    earned_before: np.ndarray,
    earned_at_end: np.ndarray,
    gamma: float,
) -> np.ndarray:
    """Each decision's discounted return for its seat, from the seat's reward so far.

    Args:
        game_of, seat_of: int64 (N,), the game and seat of each decision, in play order.
        earned_before: float64 (N,), the seat's reward before the decision.
        earned_at_end: float64 (N,), the seat's reward when its game ended.
        gamma: Discount per decision of the seat.

    Returns:
        float64 (N,): ``sum_k gamma**k * R_k``, with ``R_k`` the reward the seat earned
        between its ``k``-th decision from this one and its next.
    """
    returns = np.empty(len(game_of))
    following: dict[tuple[int, int], tuple[float, float]] = {}  # (return, earned_before)
    for i in range(len(game_of) - 1, -1, -1):
        key = (int(game_of[i]), int(seat_of[i]))
        later_return, later_before = following.get(key, (0.0, float(earned_at_end[i])))
        returns[i] = (later_before - earned_before[i]) + gamma * later_return
        following[key] = (returns[i], float(earned_before[i]))
    return returns


#: Games per chunk: the unit of seeding and of work, fixed so that the data never depends
#: on the worker count (256 games keep the engine's batches efficient and give 3000 games
#: 12 chunks to spread).
DEMONSTRATION_CHUNK_GAMES = 256

ChunkResult = TypeVar("ChunkResult")


class DataWorkersError(ValueError):
    """Distributed data generation cannot run: Ray is missing or cannot start or connect."""


def chunk_sizes(games: int, chunk_games: int = DEMONSTRATION_CHUNK_GAMES) -> list[int]:
    """Games in each chunk: full chunks of ``chunk_games``, then the remainder (if any)."""
    if chunk_games < 1:
        raise ValueError(f"chunk_games={chunk_games!r} is invalid: allowed an int >= 1")
    full, rest = divmod(games, chunk_games)
    return [chunk_games] * full + ([rest] if rest else [])


def chunk_seed(seed: int, chunk: int) -> int:
    """Chunk ``chunk``'s int seed from the root ``seed``: the first word of
    ``SeedSequence(seed, spawn_key=(chunk,))``, in ``0 .. 2**32 - 1``."""
    return int(np.random.SeedSequence(seed, spawn_key=(chunk,)).generate_state(1)[0])


def demonstration_chunk(
    rules: SkyjoRules, teacher_spec: str, seed: int, teacher_seed: int, chunk: int, games: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chunk ``chunk`` of the demonstrations: ``games`` games dealt from
    ``chunk_seed(seed, chunk)``, every seat played by one ``teacher_spec`` agent built with
    ``chunk_seed(teacher_seed, chunk)``.

    Self-contained (plain arguments, teacher built here) so that it runs as a Ray task.

    Returns:
        ``(observations float32 (N, O), masks bool (N, A), actions int64 (N,))``.
    """
    teacher = make_agent(teacher_spec, rules, seed=chunk_seed(teacher_seed, chunk))
    return collect_demonstrations(
        rules, [teacher], games, chunk_seed(seed, chunk), batch=max(games, 1)
    )


def collect_chunked_demonstrations(
    rules: SkyjoRules,
    teacher_spec: str,
    games: int,
    seed: int,
    teacher_seed: int,
    workers: int = 0,
    ray_address: str | None = None,
    chunk_games: int = DEMONSTRATION_CHUNK_GAMES,
    should_stop: Callable[[], bool] | None = None,
    on_chunk_done: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every decision of ``games`` teacher self-play games, chunk by chunk (`demonstration_chunk`).

    Args:
        rules: The rules to play.
        teacher_spec: Agent spec of the teacher (`agents.registry.make_agent`); a ``ppo:PATH``
            must be readable by every worker.
        games: Games in all (>= 1).
        seed: Root seed of the deals; the same seeds give the same arrays for any
            ``workers``.
        teacher_seed: Root seed of the teachers (one teacher per chunk).
        workers: 0 plays the chunks here; N >= 1 runs them as Ray tasks, at most N at once.
        ray_address: Ray cluster to join (``"auto"``, ``"ray://host:10001"``); None starts a
            local Ray with ``workers`` CPUs when none is running.
        chunk_games: Games per chunk (changes the data; keep the default).
        should_stop: See `run_chunks`.
        on_chunk_done: Called with a chunk's game count as each chunk ends (progress).

    Returns:
        ``(observations float32 (N, O), masks bool (N, A), actions int64 (N,))``, chunks
        concatenated in chunk order.

    Raises:
        ChunksStopped: ``should_stop`` answered True.
        DataWorkersError: ``workers > 0`` and Ray is not installed or cannot start/connect.
        ValueError: ``games`` is not an int >= 1.
    """
    if isinstance(games, bool) or not isinstance(games, int) or games < 1:
        raise ValueError(f"games={games!r} is invalid: allowed an int >= 1")
    task = partial(demonstration_chunk, rules, teacher_spec, seed, teacher_seed)
    parts = run_chunks(task, chunk_sizes(games, chunk_games), workers, ray_address,
                       should_stop=should_stop, on_chunk_done=on_chunk_done)
    return tuple(np.concatenate(arrays) for arrays in zip(*parts, strict=True))  # type: ignore[return-value]


def run_chunks(
    task: Callable[[int, int], ChunkResult],
    sizes: Sequence[int],
    workers: int = 0,
    ray_address: str | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_chunk_done: Callable[[int], None] | None = None,
) -> list[ChunkResult]:
    """``[task(chunk, sizes[chunk]) for every chunk]``, here or as Ray tasks, in chunk order:
    `agents.parallel.run_chunks` (the one chunked task runner) over chunks of given sizes.

    ``task`` must derive all its randomness from its arguments (e.g. `chunk_seed`): then
    where and in which order the chunks run changes nothing.

    Args:
        task: A picklable callable ``(chunk index, chunk size) -> result``.
        sizes: The size of each chunk.
        workers: 0 runs the chunks in this process; N >= 1 keeps at most N Ray tasks running.
        ray_address: See `collect_chunked_demonstrations`.
        should_stop: Asked before each chunk starts (and, on Ray, after each one ends);
            True abandons the work (e.g. a polite stop of a training run).
        on_chunk_done: Called with ``sizes[chunk]`` as each chunk ends, in the order they
            end (for a progress bar).

    Raises:
        ChunksStopped: ``should_stop`` answered True.
        DataWorkersError: ``workers > 0`` and Ray is not installed or cannot start/connect
            (the message names ``data_workers``).
        ValueError: ``workers`` is not an int >= 0.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ValueError(f"workers={workers!r} is invalid: allowed an int >= 0")
    done = on_chunk_done or (lambda size: None)
    sizes = tuple(sizes)
    if workers > 0:
        _import_ray(workers)  # its own message names the config key
    try:
        return parallel.run_chunks(
            partial(_sized, task, sizes), range(len(sizes)), workers, ray_address,
            on_result=lambda chunk, _: done(sizes[chunk]), should_stop=should_stop,
        )
    except parallel.DistributedSetupError as error:  # Ray missing, or it cannot start
        raise DataWorkersError(f"data_workers={workers}: {error}") from None


def _import_ray(workers: int) -> None:
    try:
        importlib.import_module("ray")
    except ImportError:
        raise DataWorkersError(
            f"data_workers={workers} needs Ray, which is not installed: "
            "pip install -e '.[distributed]', or set data_workers: 0 to generate in-process"
        ) from None


def _sized(task: Callable[[int, int], ChunkResult], sizes: tuple[int, ...],
           chunk: int) -> ChunkResult:
    """``task(chunk, sizes[chunk])``: a chunk of `run_chunks` as `agents.parallel` runs it."""
    return task(chunk, sizes[chunk])


def actor_parameters(policy) -> list:
    """The parameters that shape the action distribution (not the value head)."""
    return [*policy.mlp_extractor.policy_net.parameters(), *policy.action_net.parameters()]


def critic_parameters(policy) -> list:
    """The parameters of the value estimate (not the action distribution)."""
    return [*policy.mlp_extractor.value_net.parameters(), *policy.value_net.parameters()]


def clone_policy(
    policy,
    observations: np.ndarray,
    masks: np.ndarray,
    actions: np.ndarray,
    epochs: int,
    batch_size: int = 4096,
    learning_rate: float = 1e-3,
    seed: int = 0,
    value_targets: np.ndarray | None = None,
    anchor: float = 0.0,
    on_epoch_done: Callable[[], None] | None = None,
    target_probabilities: np.ndarray | None = None,
) -> dict[str, float]:
    """Fit the actor of a MaskablePPO policy to the demonstrations (masked cross-entropy),
    and its critic to ``value_targets`` when given (mean squared error).

    With ``anchor`` = a > 0 the actor's target is not the demonstrated move alone but
    ``(1 - a) * one_hot(move) + a * p_before`` (``p_before``: the policy's own action
    probabilities before the fit), a cross-entropy towards a mix that keeps what the
    policy already does where the teacher agrees and moves part of the mass where it does
    not. Expert iteration (`agents.training.expert`) uses it so that a fit to the search's
    moves does not chase their rare, noisy surprises (docs/results.md).

    The actor and the critic are separate networks over a features extractor without
    parameters, so the summed loss trains each on its own target.

    Args:
        policy: ``model.policy`` of a MaskablePPO (changed in place).
        observations: float32 (N, O). masks: bool (N, A). actions: int64 (N,).
        epochs: Passes over the data.
        batch_size: Minibatch size.
        learning_rate: Adam step size (a separate optimizer; PPO's is untouched).
        seed: Shuffling seed.
        value_targets: float (N,), what the critic should predict for each observation
            (e.g. the return from there on); None leaves the critic alone.
        anchor: Weight of the policy's own prior distribution in the actor's target
            (0 <= anchor < 1; 0 = plain cloning).
        on_epoch_done: Called after each pass over the data (progress).
        target_probabilities: float (N, A), a whole target distribution per row (zero on
            illegal actions), fitted by cross-entropy instead of ``actions`` (then only
            the accuracy's reference) and ``anchor`` (which must be 0).

    Returns:
        ``{"loss", "accuracy"}`` on the last epoch (accuracy of the greedy action), plus
        ``"value_loss"`` (mean squared error) with ``value_targets``.
    """
    import torch

    if not 0.0 <= anchor < 1.0:
        raise ValueError(f"anchor={anchor!r} is invalid: allowed 0 <= anchor < 1")
    if target_probabilities is not None and anchor:
        raise ValueError("anchor mixes the policy into one-hot targets; with "
                         "target_probabilities mix them beforehand (anchor must be 0)")
    generator = np.random.default_rng(seed)
    parameters = actor_parameters(policy)
    if value_targets is not None:
        parameters += critic_parameters(policy)
        value_t = torch.as_tensor(np.asarray(value_targets, np.float32))
    optimizer = torch.optim.Adam(parameters, lr=learning_rate)
    obs_t = torch.as_tensor(observations)
    mask_t = torch.as_tensor(masks)
    act_t = torch.as_tensor(actions)
    prior = action_probabilities(policy, obs_t, mask_t, batch_size) if anchor > 0 else None
    soft_t = (None if target_probabilities is None
              else torch.as_tensor(np.asarray(target_probabilities, np.float32)))
    policy.set_training_mode(True)
    loss_sum = correct = seen = value_sum = 0.0
    for _ in range(epochs):
        order = torch.as_tensor(generator.permutation(len(actions)))
        loss_sum = correct = seen = value_sum = 0.0
        for start in range(0, len(actions), batch_size):
            rows = order[start : start + batch_size]
            features = policy.extract_features(obs_t[rows], policy.pi_features_extractor)
            logits = _masked_logits(policy, features, mask_t[rows])
            if soft_t is not None:
                target = soft_t[rows]
            elif prior is not None:
                target = (1.0 - anchor) * torch.nn.functional.one_hot(
                    act_t[rows], logits.shape[1]
                ).to(logits.dtype) + anchor * prior[rows]
            else:
                target = None
            if target is None:
                loss = torch.nn.functional.cross_entropy(logits, act_t[rows])
            else:
                loss = -(target * torch.log_softmax(logits, dim=1)).sum(dim=1).mean()
            total = loss
            if value_targets is not None:
                values = policy.value_net(policy.mlp_extractor.forward_critic(features))
                value_loss = torch.nn.functional.mse_loss(values.squeeze(1), value_t[rows])
                total = loss + value_loss
                value_sum += float(value_loss.detach()) * len(rows)
            optimizer.zero_grad()
            total.backward()
            optimizer.step()
            loss_sum += float(loss.detach()) * len(rows)
            correct += float((logits.argmax(dim=1) == act_t[rows]).sum())
            seen += len(rows)
        if on_epoch_done is not None:
            on_epoch_done()
    policy.set_training_mode(False)
    stats = {"loss": loss_sum / seen, "accuracy": correct / seen}
    if value_targets is not None:
        stats["value_loss"] = value_sum / seen
    return stats


def fit_critic(
    policy,
    observations: np.ndarray,
    targets: np.ndarray,
    epochs: int,
    batch_size: int = 256,
    learning_rate: float = 1e-4,
    seed: int = 0,
) -> dict[str, float]:
    """Fit the critic of a MaskablePPO policy alone to ``targets`` (mean squared error);
    the actor is not touched (its parameters are not in the optimizer, and the features
    extractor has none).

    Args:
        policy: ``model.policy`` of a MaskablePPO (changed in place).
        observations: float32 (N, O).
        targets: float (N,), what the critic should predict for each observation.
        epochs: Passes over the data.
        batch_size: Minibatch size.
        learning_rate: Adam step size.
        seed: Shuffling seed.

    Returns:
        ``{"value_loss_before", "value_loss"}``: the mean squared error over all rows
        before the fit, and over the last epoch's minibatches.
    """
    import torch

    generator = np.random.default_rng(seed)
    optimizer = torch.optim.Adam(critic_parameters(policy), lr=learning_rate)
    obs_t = torch.as_tensor(np.asarray(observations, np.float32))
    target_t = torch.as_tensor(np.asarray(targets, np.float32))
    with torch.no_grad():
        before = float(torch.nn.functional.mse_loss(
            policy.predict_values(obs_t)[:, 0], target_t))
    policy.set_training_mode(True)
    value_sum = seen = 0.0
    for _ in range(epochs):
        order = torch.as_tensor(generator.permutation(len(target_t)))
        value_sum = seen = 0.0
        for start in range(0, len(target_t), batch_size):
            rows = order[start : start + batch_size]
            values = policy.predict_values(obs_t[rows])[:, 0]
            loss = torch.nn.functional.mse_loss(values, target_t[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            value_sum += float(loss.detach()) * len(rows)
            seen += len(rows)
    policy.set_training_mode(False)
    return {"value_loss_before": before, "value_loss": value_sum / max(seen, 1.0)}


def action_probabilities(policy, observations, masks, batch_size: int = 4096):
    """The policy's masked action probabilities: float32 tensor (N, A), no gradient, from
    observations float32 tensor (N, O) and masks bool tensor (N, A)."""
    import torch

    parts = []
    with torch.no_grad():
        for start in range(0, len(observations), batch_size):
            rows = slice(start, start + batch_size)
            features = policy.extract_features(observations[rows], policy.pi_features_extractor)
            logits = _masked_logits(policy, features, masks[rows])
            parts.append(torch.softmax(logits, dim=1))
    return torch.cat(parts)


def _masked_logits(policy, features, masks):
    """The actor's logits with illegal actions at sb3-contrib's -1e8: tensor (N, A)."""
    logits = policy.action_net(policy.mlp_extractor.forward_actor(features))
    return logits.masked_fill(~masks, -1e8)
