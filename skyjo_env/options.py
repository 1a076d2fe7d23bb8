"""`EnvOptions`: the options every env view takes, with their defaults and checks in one
place.

Every view (`skyjo_env.aec.SkyjoAECEnv` and its ``env``/``raw_env``,
`skyjo_env.single_agent.SkyjoGymEnv`, `skyjo_env.vec_env.SkyjoVecEnv`, Gymnasium's
``skyjo_env/Skyjo-v0``) and the batched core under two of them
(`skyjo_env.learner_games.LearnerGames`) take the same options: which rules to play, the
episode mode, what an illegal action does, and how to render. The views accept them as
keyword arguments (``SkyjoVecEnv(num_envs=8, episode="round", num_players=3)``) and turn
them into one `EnvOptions` with `EnvOptions.from_keywords`; everything else about them (the
rules the engine runs, the observation space) is derived here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import observation_bounds

#: Allowed ``episode`` values: a whole game, or one round (a one-round game).
EPISODE_MODES = ("game", "round")
#: Allowed ``illegal_action`` values: raise `IllegalActionError`, or end the episode with a
#: penalty.
ILLEGAL_ACTION_MODES = ("raise", "penalize")
#: Allowed ``render_mode`` values besides None.
RENDER_MODES = ("ansi", "human")


def resolve_rules(rules: SkyjoRules | None, rule_kwargs: dict[str, Any]) -> SkyjoRules:
    """The rules to play: ``rules`` itself, or ``SkyjoRules(**rule_kwargs)`` when None.

    Args:
        rules: The rules, or None for the official ones changed by ``rule_kwargs``.
        rule_kwargs: `SkyjoRules` fields to set (on ``rules`` when given).

    Raises:
        ValueError: ``rules`` is neither a `SkyjoRules` nor None, a keyword is not a
            `SkyjoRules` field (when ``rules`` is None), or a value is invalid.
        TypeError: A keyword is not a `SkyjoRules` field (when ``rules`` is given).
    """
    if rules is None:
        return SkyjoRules.from_dict(dict(rule_kwargs))
    if not isinstance(rules, SkyjoRules):
        raise ValueError(f"rules must be a SkyjoRules or None, got {type(rules).__name__}")
    if rule_kwargs:
        return rules.replace(**rule_kwargs)
    return rules


def observation_box(rules: SkyjoRules):
    """The observation vector's space: ``gymnasium.spaces.Box(low, high, (size,), float32)``.

    Gymnasium is imported here, not with this module, so the batched core
    (`skyjo_env.learner_games`) loads without it.
    """
    from gymnasium import spaces

    low, high = observation_bounds(rules)
    return spaces.Box(low=low, high=high, dtype=np.float32)


@dataclass(frozen=True)
class EnvOptions:
    """The options every env view takes, validated when built.

    Attributes:
        rules: The rules as given (`engine_rules` are those the engine runs).
        episode: ``"game"`` (default): an episode is a whole game. ``"round"``: each
            episode is a one-round game (see `engine_rules`), rewarded for that round only.
        illegal_action: ``"raise"`` (default): an illegal action raises the engine's
            `IllegalActionError` and changes nothing. ``"penalize"``: it ends the episode
            and the offender gets ``illegal_penalty``.
        illegal_penalty: The offender's reward under ``"penalize"`` (a finite number,
            stored as a float; default -1.0).
        render_mode: None (default), ``"ansi"`` (``render()`` returns the text) or
            ``"human"`` (it prints it).
    """

    rules: SkyjoRules = field(default_factory=SkyjoRules)
    episode: str = "game"
    illegal_action: str = "raise"
    illegal_penalty: float = -1.0
    render_mode: str | None = None

    def __post_init__(self) -> None:
        """Check every option.

        Raises:
            ValueError: ``rules`` is not a `SkyjoRules`, ``episode`` not one of
                `EPISODE_MODES`, ``illegal_action`` not one of `ILLEGAL_ACTION_MODES`,
                ``illegal_penalty`` not a finite number, or ``render_mode`` neither None
                nor one of `RENDER_MODES`.
        """
        if not isinstance(self.rules, SkyjoRules):
            raise ValueError(f"rules must be a SkyjoRules, got {type(self.rules).__name__}")
        if self.episode not in EPISODE_MODES:
            raise ValueError(f"episode={self.episode!r} is invalid: allowed 'game' or 'round'")
        if self.illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(
                f"illegal_action={self.illegal_action!r} is invalid: allowed 'raise' or "
                f"'penalize'"
            )
        penalty = self.illegal_penalty
        if not isinstance(penalty, (int, float, np.integer, np.floating)) or not np.isfinite(
            penalty
        ):
            raise ValueError(
                f"illegal_penalty={self.illegal_penalty!r} is invalid: allowed a finite number"
            )
        if self.render_mode is not None and self.render_mode not in RENDER_MODES:
            raise ValueError(
                f"render_mode={self.render_mode!r} is invalid: allowed None, 'ansi', 'human'"
            )
        object.__setattr__(self, "illegal_penalty", float(self.illegal_penalty))

    @classmethod
    def from_keywords(cls, rules: SkyjoRules | None = None, **keywords: Any) -> EnvOptions:
        """The options of a view's keyword arguments.

        Args:
            rules: The rules; None for ``SkyjoRules(**rule fields)``.
            **keywords: `EnvOptions` fields (``episode``, ``illegal_action``,
                ``illegal_penalty``, ``render_mode``); every other keyword is a `SkyjoRules`
                field (``num_players=3``), set on ``rules`` when given.

        Raises:
            ValueError: A bad rules field or option (see `resolve_rules` and the class).
        """
        names = OPTION_NAMES
        options = {name: keywords.pop(name) for name in list(keywords) if name in names}
        return cls(resolve_rules(rules, keywords), **options)

    def replace(self, **changes: Any) -> EnvOptions:
        """A copy with some fields changed (checked like the constructor)."""
        return dataclasses.replace(self, **changes)

    @property
    def engine_rules(self) -> SkyjoRules:
        """The rules the engine runs for the episode mode.

        ``"round"`` episodes are one-round games: the engine runs with ``max_rounds=1``, so
        the game (and the episode) ends with the first round and the final grids stay in
        place.
        """
        return self.rules.replace(max_rounds=1) if self.episode == "round" else self.rules

    @property
    def game_bonus(self) -> bool:
        """Whether the game-end placement reward applies (``episode="game"``)."""
        return self.episode == "game"

    @property
    def penalize(self) -> bool:
        """Whether an illegal action ends the episode with a penalty instead of raising."""
        return self.illegal_action == "penalize"

    def observation_space(self):
        """The observation vector's space for these rules (`observation_box`)."""
        return observation_box(self.rules)


#: The keyword arguments of a view that are `EnvOptions` fields (not rules fields).
OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(EnvOptions)) - {"rules"}


__all__ = [
    "EPISODE_MODES",
    "ILLEGAL_ACTION_MODES",
    "OPTION_NAMES",
    "RENDER_MODES",
    "EnvOptions",
    "observation_box",
    "resolve_rules",
]
