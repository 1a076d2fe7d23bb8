"""skyjo-rl environments: the rules engine and the views over it.

`env` / `raw_env` (PettingZoo AEC), `SkyjoGymEnv` (Gymnasium, one learner) and `SkyjoVecEnv`
(Stable-Baselines3 VecEnv, many games) are views over the one engine in `skyjo_env.core`.
The views load on first use, so importing `skyjo_env` (or the engine, `skyjo_env.core`)
imports no RL library: PettingZoo and Gymnasium come with the first view asked for, and
Stable-Baselines3 (with torch) only with `SkyjoVecEnv`.

``gymnasium.make("skyjo_env/Skyjo-v0", ...)`` builds a `SkyjoGymEnv` once this package is
imported; the id is registered when Gymnasium is (see `skyjo_env.registration`).
"""

import importlib
from typing import Any

from skyjo_env.core import (
    ActionKind,
    IllegalActionError,
    Phase,
    SkyjoRules,
    available_presets,
    describe_action,
    load_rules,
)
from skyjo_env.encoding import ObservationEncoder
from skyjo_env.protocol import Agent, RandomAgent
from skyjo_env.registration import register_when_gymnasium_loads

register_when_gymnasium_loads()

#: view name -> module that defines it, imported on first access
_VIEWS = {
    "env": "skyjo_env.aec",
    "raw_env": "skyjo_env.aec",
    "SkyjoGymEnv": "skyjo_env.single_agent",
    "SkyjoVecEnv": "skyjo_env.vec_env",
    "EnvNeedsResetError": "skyjo_env.learner_games",
    "OpponentError": "skyjo_env.learner_games",
}


def __getattr__(name: str) -> Any:
    if name in _VIEWS:
        return getattr(importlib.import_module(_VIEWS[name]), name)
    raise AttributeError(f"module 'skyjo_env' has no attribute {name!r}")


__all__ = [
    "ActionKind",
    "Agent",
    "EnvNeedsResetError",
    "IllegalActionError",
    "ObservationEncoder",
    "OpponentError",
    "Phase",
    "RandomAgent",
    "SkyjoGymEnv",
    "SkyjoRules",
    "SkyjoVecEnv",
    "available_presets",
    "describe_action",
    "env",
    "load_rules",
    "raw_env",
]
