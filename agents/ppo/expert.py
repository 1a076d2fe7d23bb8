"""Expert iteration: distil decision-time search into the PPO network during training.

Every ``expert_interval`` learner decisions (`agents.ppo.training.Trainer.expert_iteration`),
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
(`agents.ppo.imitation.run_chunks`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from agents.ppo.imitation import RecordedGames, chunk_seed, chunk_sizes, record_games, run_chunks
from agents.ppo.shaping import grid_potential
from agents.registry import make_agent
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationLayout

#: Games per chunk of search games: small, because a searched game costs about a second.
EXPERT_CHUNK_GAMES = 16
#: Minibatch of the fit: a step's few thousand decisions still give dozens of updates.
EXPERT_BATCH_SIZE = 256


def teacher_spec(search: str, policy_path: str) -> str:
    """The agent spec of the search over a saved policy: ``"<search>:ppo:<policy_path>"``."""
    return f"{search}:ppo:{policy_path}"


def expert_chunk(
    rules: SkyjoRules, spec: str, seed: int, teacher_seed: int, gamma: float, chunk: int,
    games: int,
) -> RecordedGames:
    """Chunk ``chunk`` of the search games: ``games`` games dealt from
    ``chunk_seed(seed, chunk)``, every seat played by one ``spec`` agent built with
    ``chunk_seed(teacher_seed, chunk)`` (self-contained, so it runs as a Ray task)."""
    teacher = make_agent(spec, rules, seed=chunk_seed(teacher_seed, chunk))
    return record_games(
        rules, [teacher], games, chunk_seed(seed, chunk), batch=max(games, 1), gamma=gamma
    )


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
) -> RecordedGames:
    """Every decision of ``games`` self-play games of the agent ``spec``, chunk by chunk.

    Args:
        rules: The rules to play.
        spec: The searching agent's spec (`teacher_spec`); its ``ppo:PATH`` must be
            readable by every worker.
        games: Games in all (>= 1).
        seed: Root seed of the deals. teacher_seed: root seed of the agents.
        gamma: Discount per decision of the acting seat, for the returns.
        workers, ray_address: Where the chunks run (`agents.ppo.imitation.run_chunks`).
        should_stop: Asked between chunks; True abandons the games (`ChunksStopped`).
        chunk_games: Games per chunk (changes the data; keep the default).

    Returns:
        `RecordedGames` of all chunks, in chunk order.
    """
    task = partial(expert_chunk, rules, spec, seed, teacher_seed, gamma)
    parts = run_chunks(task, chunk_sizes(games, chunk_games), workers, ray_address, should_stop)
    return RecordedGames(*(np.concatenate(arrays) for arrays in zip(*parts, strict=True)))


def value_targets(
    played: RecordedGames, layout: ObservationLayout, shaping: float
) -> np.ndarray:
    """What the critic should predict for each recorded decision: float64 (N,).

    With potential-based shaping of weight ``w`` (`agents.ppo.shaping`, ``Phi`` = 0 after
    the episode), the shaped return telescopes to the plain return minus ``w * Phi(s)``,
    for any gamma; the critic of a shaped run learns that, so it is the target here.
    """
    if shaping == 0:
        return played.returns.copy()
    return played.returns - shaping * grid_potential(played.observations, layout)


def agreement(chosen: np.ndarray, searched: np.ndarray) -> float:
    """Share of rows where ``chosen`` (int (N,)) equals ``searched`` (int (N,))."""
    return float(np.mean(np.asarray(chosen) == np.asarray(searched))) if len(chosen) else 0.0


__all__ = [
    "EXPERT_BATCH_SIZE",
    "EXPERT_CHUNK_GAMES",
    "agreement",
    "collect_expert_games",
    "expert_chunk",
    "teacher_spec",
    "value_targets",
]
