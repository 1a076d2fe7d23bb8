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

from skyjo_env.core.actions import num_actions
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationLayout

Activation = Literal["relu", "tanh"]
#: Network inputs, each the one before it plus more columns appended (so a network of an
#: earlier kind can be widened into a later one: `agents.ppo.checkpoint.widened_state`).
Features = Literal["raw", "grid", "grid_feeding", "grid_feeding_waits", "grid_feeding_waits_risk"]

ACTIVATIONS: tuple[str, ...] = get_args(Activation)
FEATURES: tuple[str, ...] = get_args(Features)

MAX_NETWORK_PARAMETERS = 1 << 24
"""The largest network trained or loaded: 16,777,216 parameters (64 MiB of float32
weights, and as much again for each of Adam's two moments; the shipped 256x256 networks
have about 0.26 million). Counted from the description (`network_parameter_count`)
before anything is built, so a config asking for more is refused at its start rather than
when its first checkpoint is saved."""


def network_parameter_count(net_arch: list[int], rules: SkyjoRules) -> int:
    """An upper bound on the parameters of a policy of ``net_arch`` hidden layers for
    ``rules``, computed without building it: separate actor and critic MLPs over the
    widest network input of all `FEATURES` (the observation plus 9·S + 2·P + 10 features,
    S slots and P players), an action head and a value head.

    Args:
        net_arch: Hidden layer widths (at least one).
        rules: The rules the network plays (its input and action sizes).
    """
    widest_input = (ObservationLayout(rules).size + 9 * rules.num_slots
                    + 2 * rules.num_players + 10)
    widths = [widest_input, *net_arch]
    hidden = sum(fan_in * fan_out + fan_out
                 for fan_in, fan_out in zip(widths[:-1], widths[1:], strict=True))
    actions = num_actions(rules.num_slots)
    return 2 * hidden + (net_arch[-1] + 1) * actions + net_arch[-1] + 1


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
