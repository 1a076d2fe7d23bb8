"""Imitation warm start: teach the PPO policy a teacher's moves before self-play.

PPO from scratch needs many millions of decisions to learn even which slot to swap a low
card into. Cloning a heuristic first (supervised cross-entropy on the teacher's legal
choices, the teacher in every seat of batched full games) gives PPO a policy that already
plays sensibly, and the reinforcement learning then improves on it.

The demonstrations come in chunks of `DEMONSTRATION_CHUNK_GAMES` games, each dealt and
played by a teacher built inside the chunk, both seeded from root seeds and the chunk
index alone (`chunk_seed`), so the data for a seed is the same whether the chunks run in this process
(``workers=0``) or as Ray tasks on any number of workers (`run_chunks`, which any other
seeded per-chunk data generator can reuse). Ray is imported only when ``workers > 0``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

import numpy as np

from agents.registry import make_agent
from skyjo_env.core import legal_action_mask, new_batch, reset, step
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationEncoder
from skyjo_env.protocol import Agent


def collect_demonstrations(
    rules: SkyjoRules, teachers: Sequence[Agent], games: int, seed: int, batch: int = 1024
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every decision of ``games`` full games, seat ``p`` played by ``teachers[p % k]``.

    Returns:
        ``(observations float32 (N, O), masks bool (N, A), actions int64 (N,))``.
    """
    encoder = ObservationEncoder(rules)
    observations, masks, actions = [], [], []
    rng = np.random.default_rng(seed)
    remaining = games
    while remaining > 0:
        size = min(batch, remaining)
        remaining -= size
        state = new_batch(rules, size)
        reset(state, rng)
        chosen = np.empty(size, np.int64)
        while not state.all_over:
            running = ~state.game_over
            mask = legal_action_mask(state)
            seen = encoder.encode(state, state.current_player)
            chosen[:] = -1
            for index, teacher in enumerate(teachers):
                rows = np.flatnonzero(running & (state.current_player % len(teachers) == index))
                if rows.size:
                    chosen[rows] = teacher.act(seen[rows], mask[rows])
            observations.append(seen[running])
            masks.append(mask[running])
            actions.append(chosen[running].copy())
            step(state, chosen)
    return np.concatenate(observations), np.concatenate(masks), np.concatenate(actions)


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

    Returns:
        ``(observations float32 (N, O), masks bool (N, A), actions int64 (N,))``, chunks
        concatenated in chunk order.

    Raises:
        DataWorkersError: ``workers > 0`` and Ray is not installed or cannot start/connect.
        ValueError: ``games`` is not an int >= 1.
    """
    if isinstance(games, bool) or not isinstance(games, int) or games < 1:
        raise ValueError(f"games={games!r} is invalid: allowed an int >= 1")
    task = partial(demonstration_chunk, rules, teacher_spec, seed, teacher_seed)
    parts = run_chunks(task, chunk_sizes(games, chunk_games), workers, ray_address)
    return tuple(np.concatenate(arrays) for arrays in zip(*parts, strict=True))  # type: ignore[return-value]


def run_chunks(
    task: Callable[[int, int], ChunkResult],
    sizes: Sequence[int],
    workers: int = 0,
    ray_address: str | None = None,
) -> list[ChunkResult]:
    """``[task(chunk, sizes[chunk]) for every chunk]``, here or as Ray tasks, in chunk order.

    ``task`` must derive all its randomness from its arguments (e.g. `chunk_seed`): then
    where and in which order the chunks run changes nothing.

    Args:
        task: A picklable callable ``(chunk index, chunk size) -> result``.
        sizes: The size of each chunk.
        workers: 0 runs the chunks in this process; N >= 1 keeps at most N Ray tasks running.
        ray_address: See `collect_chunked_demonstrations`.

    Raises:
        DataWorkersError: ``workers > 0`` and Ray is not installed or cannot start/connect.
        ValueError: ``workers`` is not an int >= 0.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ValueError(f"workers={workers!r} is invalid: allowed an int >= 0")
    if workers == 0:
        return [task(chunk, size) for chunk, size in enumerate(sizes)]
    _import_ray(workers)  # its own message names the config key
    from agents.evaluation.distributed import DistributedSetupError, ray_session

    try:
        with ray_session(workers, ray_address) as ray:
            return _run_on_ray(ray, task, sizes, workers)
    except DistributedSetupError as error:  # Ray could not start or connect
        raise DataWorkersError(f"data_workers={workers}: {error}") from None


def _run_on_ray(
    ray: Any, task: Callable[[int, int], ChunkResult], sizes: Sequence[int], workers: int
) -> list[ChunkResult]:
    """`run_chunks` on a running Ray: at most ``workers`` tasks at once, results in order."""
    remote = ray.remote(_call_task)  # ray.remote takes functions, not partials
    shared_task = ray.put(task)  # sent to the object store once, not once per chunk
    results: dict[int, Any] = {}
    running: dict[Any, int] = {}
    for chunk, size in enumerate(sizes):
        if len(running) >= workers:  # at most `workers` at once, even on a big cluster
            _collect_one(ray, running, results)
        running[remote.remote(shared_task, chunk, size)] = chunk
    while running:
        _collect_one(ray, running, results)
    return [results[chunk] for chunk in range(len(sizes))]


def _call_task(task: Callable[[int, int], ChunkResult], chunk: int, size: int) -> ChunkResult:
    return task(chunk, size)


def _collect_one(ray: Any, running: dict[Any, int], results: dict[int, Any]) -> None:
    (done,), _ = ray.wait(list(running), num_returns=1)
    results[running.pop(done)] = ray.get(done)


def _import_ray(workers: int) -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise DataWorkersError(
            f"data_workers={workers} needs Ray, which is not installed: "
            "pip install -e '.[distributed]', or set data_workers: 0 to generate in-process"
        ) from None


def actor_parameters(policy) -> list:
    """The parameters that shape the action distribution (not the value head)."""
    return [*policy.mlp_extractor.policy_net.parameters(), *policy.action_net.parameters()]


def clone_policy(
    policy,
    observations: np.ndarray,
    masks: np.ndarray,
    actions: np.ndarray,
    epochs: int,
    batch_size: int = 4096,
    learning_rate: float = 1e-3,
    seed: int = 0,
) -> dict[str, float]:
    """Fit the actor of a MaskablePPO policy to the demonstrations (masked cross-entropy).

    Args:
        policy: ``model.policy`` of a MaskablePPO (changed in place).
        observations: float32 (N, O). masks: bool (N, A). actions: int64 (N,).
        epochs: Passes over the data.
        batch_size: Minibatch size.
        learning_rate: Adam step size (a separate optimizer; PPO's is untouched).
        seed: Shuffling seed.

    Returns:
        ``{"loss", "accuracy"}`` on the last epoch (accuracy of the greedy action).
    """
    import torch

    generator = np.random.default_rng(seed)
    optimizer = torch.optim.Adam(actor_parameters(policy), lr=learning_rate)
    obs_t = torch.as_tensor(observations)
    mask_t = torch.as_tensor(masks)
    act_t = torch.as_tensor(actions)
    policy.set_training_mode(True)
    loss_sum = correct = seen = 0.0
    for _ in range(epochs):
        order = torch.as_tensor(generator.permutation(len(actions)))
        loss_sum = correct = seen = 0.0
        for start in range(0, len(actions), batch_size):
            rows = order[start : start + batch_size]
            features = policy.extract_features(obs_t[rows], policy.pi_features_extractor)
            logits = policy.action_net(policy.mlp_extractor.forward_actor(features))
            logits = logits.masked_fill(~mask_t[rows], -1e8)
            loss = torch.nn.functional.cross_entropy(logits, act_t[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_sum += float(loss.detach()) * len(rows)
            correct += float((logits.argmax(dim=1) == act_t[rows]).sum())
            seen += len(rows)
    policy.set_training_mode(False)
    return {"loss": loss_sum / seen, "accuracy": correct / seen}
