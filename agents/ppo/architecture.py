"""What a PPO network is made of, as plain data: hidden activations, kinds of network
input, and the SB3 ``policy_kwargs`` a description builds.

A checkpoint records ``{"net_arch": list[int], "activation": str, "features": str}``
(`agents.ppo.checkpoint.policy_architecture`); the trainer builds its model from the same
description (`agents.training.config.TrainConfig.policy_architecture`). torch loads only
when `policy_kwargs` is called, so reading the names costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

from skyjo_env.core.rules import SkyjoRules

Activation = Literal["relu", "tanh"]
#: Network inputs, each the one before it plus more columns appended (so a network of an
#: earlier kind can be widened into a later one: `agents.ppo.checkpoint.widened_state`).
Features = Literal["raw", "grid", "grid_feeding", "grid_feeding_waits", "grid_feeding_waits_risk"]

ACTIVATIONS: tuple[str, ...] = get_args(Activation)
FEATURES: tuple[str, ...] = get_args(Features)


def policy_kwargs(architecture: Mapping[str, Any], rules: SkyjoRules) -> dict[str, Any]:
    """The ``policy_kwargs`` of a ``MaskableActorCriticPolicy`` with this architecture:
    separate actor and critic networks of ``net_arch`` hidden layers, the activation, and
    the features extractor (`agents.ppo.features.features_extractor_kwargs`).

    Args:
        architecture: ``{"net_arch": list[int], "activation": str, "features": str}``,
            already validated.
        rules: The rules the network plays (the features extractor's grid).
    """
    import torch

    from agents.ppo.features import features_extractor_kwargs

    layers = list(architecture["net_arch"])
    kwargs: dict[str, Any] = {
        "net_arch": {"pi": list(layers), "vf": list(layers)},
        "activation_fn": {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[architecture["activation"]],
    }
    kwargs.update(features_extractor_kwargs(architecture["features"], rules))
    return kwargs
