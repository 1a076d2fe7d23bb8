"""skyjo-rl environments: the rules engine and the views over it.

`env` / `raw_env` (PettingZoo AEC), `SkyjoGymEnv` (Gymnasium, one learner) and `SkyjoVecEnv`
(Stable-Baselines3 VecEnv, many games) are views over the one engine in `skyjo_env.core`.
`SkyjoVecEnv` is imported on first use, so importing `skyjo_env` never imports
Stable-Baselines3 or torch.
"""

from typing import Any

from skyjo_env.aec import env, raw_env
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
from skyjo_env.single_agent import SkyjoGymEnv


def __getattr__(name: str) -> Any:
    # SkyjoVecEnv subclasses SB3's VecEnv (which imports torch): load it only when asked for
    if name == "SkyjoVecEnv":
        from skyjo_env.vec_env import SkyjoVecEnv

        return SkyjoVecEnv
    raise AttributeError(f"module 'skyjo_env' has no attribute {name!r}")


__all__ = [
    "ActionKind",
    "Agent",
    "IllegalActionError",
    "ObservationEncoder",
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
