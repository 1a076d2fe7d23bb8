"""One expert-iteration step of a training run (``expert_interval`` > 0): the search games
over the policy the run saved, and the fit of the live policy to them, each seeded from
the master seed and the step's timesteps (so a resumed run repeats the step exactly).
The search games and the fit themselves are `agents.training.expert`'s."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agents.parallel import ChunksStopped
from agents.training.config import TrainConfig, TrainConfigError
from agents.training.expert import SearchGames, collect_expert_games, fit_to_search, teacher_spec
from agents.training.imitation import DataWorkersError
from agents.training.seeds import (
    SEED_EXPERT_DATA,
    SEED_EXPERT_SHUFFLE,
    SEED_EXPERT_TEACHER,
    derived_seed,
)
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationLayout


def search_games(config: TrainConfig, rules: SkyjoRules, policy_path: Path, timesteps: int,
                 should_stop: Callable[[], bool],
                 on_chunk_done: Callable[[int], None] | None = None) -> SearchGames | None:
    """``expert_games`` self-play games of ``expert_search`` over the policy saved at
    ``policy_path``, played by ``data_workers``; ``on_chunk_done`` is called with a chunk's
    games as each chunk ends (progress: the games are most of a step's time).

    Returns:
        The games with the search's action values, or None when ``should_stop`` answered
        True between chunks (the step is abandoned).

    Raises:
        TrainConfigError: Ray is missing, or cannot start or connect (names
            ``data_workers``).
    """
    import torch

    spec = teacher_spec(config.expert_search, str(policy_path))
    try:
        # building the ppo agent for the search draws torch's global generator: kept
        # out of the run, so where the games are played (here or Ray) changes nothing
        with torch.random.fork_rng(devices=[]):
            return collect_expert_games(
                rules, spec, config.expert_games,
                derived_seed(config.seed, SEED_EXPERT_DATA, timesteps),
                derived_seed(config.seed, SEED_EXPERT_TEACHER, timesteps),
                gamma=config.gamma, workers=config.data_workers,
                ray_address=config.ray_address, should_stop=should_stop,
                on_chunk_done=on_chunk_done,
            )
    except ChunksStopped:
        return None
    except DataWorkersError as error:
        raise TrainConfigError(str(error)) from None


def fit_policy(policy, config: TrainConfig, rules: SkyjoRules, searched: SearchGames,
               timesteps: int) -> dict[str, float]:
    """Fit the live policy to the search games (`agents.training.expert.fit_to_search`,
    with the config's ``expert_*`` settings; the critic too with ``expert_value_fit``).

    Returns:
        `fit_to_search`'s figures.
    """
    return fit_to_search(
        policy, searched.played, ObservationLayout(rules),
        config.expert_epochs, config.expert_learning_rate, config.expert_anchor,
        derived_seed(config.seed, SEED_EXPERT_SHUFFLE, timesteps),
        config.shaping if config.expert_value_fit else None,
        searched.values, config.expert_soft_temperature,
    )
