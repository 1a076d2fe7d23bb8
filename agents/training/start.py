"""One training start, checked once: `prepare_start` checks what a `TrainConfig` names
beyond its own values (the evaluation opponents, the warm start's ``init_from`` network or
imitation teacher, expert iteration's search, Ray for ``data_workers``) before any work,
and hands what it resolved to the trainer in a `TrainingStart`, so that nothing is loaded
or built twice: the rules as the config's validation loaded them, the first evaluation's
opponents, ``init_from``'s metadata.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

from agents.ppo.checkpoint import CheckpointError, check_initial_network
from agents.registry import AgentSpecError, make_agent, search_settings
from agents.training.config import TrainConfig, TrainConfigError, stage_label
from agents.training.evaluator import EvaluationOpponents
from agents.training.seeds import SEED_EVALUATION, derived_seed
from skyjo_env.core.rules import SkyjoRules


@dataclass(frozen=True)
class TrainingStart:
    """A training run's config with what checking it resolved (`prepare_start`).

    Attributes:
        config: The run's config (not to be changed after the start is prepared).
        rules: ``config.resolve_rules()``.
        resume: Whether the run continues its last checkpoint.
        evaluation: The evaluations' opponents, the first set already built.
        initial_network: ``init_from``'s checkpoint metadata, for a new run with
            ``init_from``; None otherwise.
    """

    config: TrainConfig
    rules: SkyjoRules
    resume: bool
    evaluation: EvaluationOpponents
    initial_network: dict[str, Any] | None = None


def prepare_start(config: TrainConfig, resume: bool = False) -> TrainingStart:
    """Check everything a run starting from ``config`` needs, once, before any work.

    Checks, in this order: unless ``resume``, the warm start of the first stage
    (`check_warm_start`); then for each stage (`TrainConfig.stage_configs`; one without
    stages): with expert iteration (``expert_interval > 0``) the options of
    ``expert_search`` (`agents.registry.search_settings`), each of ``eval_opponents``
    (built through `agents.registry.make_agent`; the first stage's for the first
    evaluation), and with expert iteration and ``data_workers`` >= 1, that Ray is installed.

    Args:
        config: The run's config.
        resume: The run continues a checkpoint: no warm start runs, so neither
            ``init_from`` nor ``imitation_teacher`` is needed (a network the run started
            from may be gone by then).

    Raises:
        TrainConfigError: a spec names no agent, or its agent cannot be built or loaded
            (the message names the key, the stage in a run with stages, and carries the
            registry's reason); a bad warm start (`check_warm_start`); or Ray is missing
            for ``data_workers``.
    """
    rules = config.resolve_rules()
    stages = config.stage_configs()
    initial_network = None if resume else check_warm_start(stages[0], rules)
    evaluation = None
    checked: set[str] = set()
    for index, stage in enumerate(stages):
        where = f"{stage_label(index, config.stages[index])}: " if config.stages else ""
        try:
            _check_expert_iteration(stage)
            if evaluation is None:
                evaluation = _evaluation_opponents(stage, rules)
                checked.update(stage.eval_opponents)
            for spec in stage.eval_opponents:
                if spec not in checked:  # built once to be checked; each evaluation builds
                    _build_checked(spec, "eval_opponents", rules, stage.seed)
                    checked.add(spec)
        except TrainConfigError as error:
            raise TrainConfigError(f"{where}{error}") from None
    return TrainingStart(config, rules, resume, evaluation, initial_network)


def _check_expert_iteration(config: TrainConfig) -> None:
    """With expert iteration: its search's options, and Ray for ``data_workers``."""
    if config.expert_interval == 0:
        return
    try:
        search_settings(config.expert_search)  # its base, the policy, does not exist yet
    except AgentSpecError as error:
        raise TrainConfigError(f"config key 'expert_search': {error}") from error
    if config.data_workers > 0:
        check_ray_installed(config.data_workers)


def _evaluation_opponents(config: TrainConfig, rules: SkyjoRules) -> EvaluationOpponents:
    """The first evaluation's opponents (which checks ``eval_opponents``)."""
    try:
        return EvaluationOpponents(config.eval_opponents, rules,
                                   derived_seed(config.seed, SEED_EVALUATION))
    except AgentSpecError as error:  # the registry wraps checkpoint errors in it
        raise TrainConfigError(f"config key 'eval_opponents': {error}") from error


def _build_checked(spec: str, key: str, rules: SkyjoRules, seed: int) -> None:
    """Build the agent ``spec`` names, to check it (naming ``key`` on an error)."""
    try:
        make_agent(spec, rules, seed=seed)
    except AgentSpecError as error:
        raise TrainConfigError(f"config key {key!r}: {error}") from error


def check_warm_start(config: TrainConfig, rules: SkyjoRules) -> dict[str, Any] | None:
    """Check what a new run starts from: that ``init_from`` names a network this config
    can start from, or else (``imitation_games > 0``) that ``imitation_teacher`` builds
    and, with ``data_workers`` >= 1, that Ray is installed for its games.

    Returns:
        ``init_from``'s checkpoint metadata, or None without ``init_from``.

    Raises:
        TrainConfigError: ``init_from`` is missing, corrupt, or another network or rules;
            the teacher spec names no agent or cannot be loaded (naming the key); or Ray
            is missing for ``data_workers``.
    """
    if config.init_from is not None:
        try:
            return check_initial_network(config.init_from, rules, config.policy_architecture())
        except CheckpointError as error:
            raise TrainConfigError(f"config key 'init_from': {error}") from error
    if config.imitation_games > 0:
        try:
            # built to be checked only: the warm start builds a teacher per chunk of games
            make_agent(config.imitation_teacher, rules, seed=config.seed)
        except AgentSpecError as error:
            raise TrainConfigError(f"config key 'imitation_teacher': {error}") from error
        if config.data_workers > 0:
            check_ray_installed(config.data_workers)
    return None


def check_ray_installed(data_workers: int) -> None:
    """Refuse ``data_workers`` >= 1 without Ray, before any work (Ray is not imported here).

    Raises:
        TrainConfigError: Ray is not installed (names ``data_workers``).
    """
    if importlib.util.find_spec("ray") is None:
        raise TrainConfigError(
            f"config key 'data_workers': got {data_workers}, which needs Ray, and Ray is not "
            "installed: pip install -e '.[distributed]', or set data_workers: 0"
        )
