"""skyjo-rl environments: the rules engine and the views over it."""

from skyjo_env.core import (
    ActionKind,
    IllegalActionError,
    Phase,
    SkyjoRules,
    available_presets,
    describe_action,
    load_rules,
)

__all__ = [
    "ActionKind",
    "IllegalActionError",
    "Phase",
    "SkyjoRules",
    "available_presets",
    "describe_action",
    "load_rules",
]
