"""Options every env view shares: which rules to play, the episode mode, illegal actions,
and the observation space built from the encoder's bounds."""

from __future__ import annotations

from typing import Any

import numpy as np

from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import observation_bounds

EPISODE_MODES = ("game", "round")
ILLEGAL_ACTION_MODES = ("raise", "penalize")


def resolve_rules(rules: SkyjoRules | None, rule_kwargs: dict[str, Any]) -> SkyjoRules:
    """The rules to play: ``rules`` itself, or ``SkyjoRules(**rule_kwargs)`` when None.

    Raises:
        ValueError: Both ``rules`` and rule keyword arguments were given, a keyword is not a
            `SkyjoRules` field, or a value is invalid.
    """
    if rules is None:
        return SkyjoRules.from_dict(dict(rule_kwargs))
    if not isinstance(rules, SkyjoRules):
        raise ValueError(f"rules must be a SkyjoRules or None, got {type(rules).__name__}")
    if rule_kwargs:
        return rules.replace(**rule_kwargs)
    return rules


def check_episode_options(episode: str, illegal_action: str, illegal_penalty: float) -> None:
    """Validate the options shared by every env view.

    Raises:
        ValueError: ``episode`` is not ``"game"``/``"round"``, ``illegal_action`` is not
            ``"raise"``/``"penalize"``, or ``illegal_penalty`` is not a finite number.
    """
    if episode not in EPISODE_MODES:
        raise ValueError(f"episode={episode!r} is invalid: allowed 'game' or 'round'")
    if illegal_action not in ILLEGAL_ACTION_MODES:
        raise ValueError(
            f"illegal_action={illegal_action!r} is invalid: allowed 'raise' or 'penalize'"
        )
    if not isinstance(illegal_penalty, (int, float, np.integer, np.floating)) or not np.isfinite(
        illegal_penalty
    ):
        raise ValueError(f"illegal_penalty={illegal_penalty!r} is invalid: allowed a finite number")


def engine_rules(rules: SkyjoRules, episode: str) -> SkyjoRules:
    """The rules the engine runs for an episode mode.

    ``"round"`` episodes are one-round games: the engine runs with ``max_rounds=1``, so the
    game (and the episode) ends with the first round and the final grids stay in place.
    """
    return rules.replace(max_rounds=1) if episode == "round" else rules


def observation_box(rules: SkyjoRules):
    """The observation vector's space: ``gymnasium.spaces.Box(low, high, (size,), float32)``."""
    # imported here so the batched core (`skyjo_env.learner_games`) loads without Gymnasium
    from gymnasium import spaces

    low, high = observation_bounds(rules)
    return spaces.Box(low=low, high=high, dtype=np.float32)
