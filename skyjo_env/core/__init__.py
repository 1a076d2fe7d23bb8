"""The Skyjo rules engine: rules config, action table, batched state and transitions.

No RL library is imported here; the environments build on this package.
"""

from skyjo_env.core.actions import (
    NO_ACTION,
    ActionKind,
    Phase,
    action_id,
    action_table,
    decode_action,
    describe_action,
    num_actions,
)
from skyjo_env.core.determinize import sample_information_set
from skyjo_env.core.engine import (
    BatchState,
    IllegalActionError,
    legal_action_mask,
    new_batch,
    reset,
    step,
    unseen_counts,
    winners,
)
from skyjo_env.core.rules import SkyjoRules, available_presets, load_rules

__all__ = [
    "NO_ACTION",
    "ActionKind",
    "BatchState",
    "IllegalActionError",
    "Phase",
    "SkyjoRules",
    "action_id",
    "action_table",
    "available_presets",
    "decode_action",
    "describe_action",
    "legal_action_mask",
    "load_rules",
    "new_batch",
    "num_actions",
    "reset",
    "sample_information_set",
    "step",
    "unseen_counts",
    "winners",
]
