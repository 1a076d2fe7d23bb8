"""A trained PPO policy as an `Agent` (`PPOAgent`), and `load_ppo_agent` for a checkpoint."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from agents.ppo.checkpoint import check_compatible, load_policy, read_metadata
from skyjo_env.core.rules import SkyjoRules


class PPOAgent:
    """A trained MaskablePPO policy behind the Agent protocol.

    Acts greedily (the most probable legal action) by default, so it needs no randomness;
    with ``deterministic=False`` it samples from its own torch generator.

    Args:
        policy_or_model: A ``MaskableActorCriticPolicy`` (`load_policy`), or an object
            with one as ``.policy`` (a MaskablePPO, as the trainer passes).
        name: Shown in results.
        deterministic: Greedy actions; else sampled.
        seed: Seeds the sampling generator.
        precision: ``float32`` (SB3's exact actions) or ``bfloat16`` (faster, for search
            rollouts; `agents.ppo.inference.MaskedActor`).
    """

    def __init__(
        self,
        policy_or_model,
        name: str = "ppo",
        deterministic: bool = True,
        seed: int = 0,
        precision: str = "float32",
    ):
        import torch

        # torch loads only with a policy
        from agents.ppo.inference import MaskedActor, policy_features

        self.model = policy_or_model
        self.policy = (
            policy_or_model
            if isinstance(policy_or_model, torch.nn.Module)
            else policy_or_model.policy
        )
        self.name = name
        self.deterministic = deterministic
        self.generator = torch.Generator().manual_seed(int(seed))
        self.actor = MaskedActor(self.policy, precision)
        #: The policy's features as a shared transform (`skyjo_env.protocol.Agent`), or
        #: None for the plain observation (``features: raw``).
        self.shared_features = policy_features(self.policy)
        #: Acting in one call with other greedy agents of this architecture
        #: (`skyjo_env.protocol.Agent`, `StackedActing`), or None (no shared features,
        #: or bfloat16, or layers that cannot be stacked).
        self.shared_acting = (StackedActing(self.actor.stack_key)
                              if self.shared_features is not None
                              and self.actor.stack_key is not None else None)

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Actions for a batch: observations float32 (N, O), masks bool (N, A) -> int64 (N,).

        Runs the policy's own modules through `MaskedActor` (no SB3 distribution objects):
        the same actions as ``policy.get_distribution`` at a fraction of the cost.

        Raises:
            PolicyInputError: Shapes that do not fit the policy, or a row without a legal
                action.
        """
        return self.actor.act(observations, action_masks, self.deterministic, self.generator)

    def act_on_features(self, features, action_masks: np.ndarray) -> np.ndarray:
        """`act` from ``shared_features`` of the observations: features float32 torch
        tensor (N, F), masks bool (N, A) -> int64 (N,), the actions `act` would choose.

        Raises:
            PolicyInputError: Masks that do not fit, or a row without a legal action.
        """
        return self.actor.act_on_features(features, action_masks, self.deterministic,
                                          self.generator)


class StackedActing:
    """`skyjo_env.protocol.SharedActing` for `PPOAgent`s of one architecture: greedy agents
    choose through one `agents.ppo.inference.StackedActors` (one batched matrix product
    per layer; the same actions as each agent's ``act_on_features`` except at near-ties
    within float32 rounding, as that class says); agents that sample (``deterministic``
    False) choose one by one from their own generators, exactly as alone.

    Args:
        stack_key: The agents' `MaskedActor.stack_key`.
    """

    def __init__(self, stack_key: tuple):
        from agents.ppo.inference import StackedActors  # torch loads only with a policy

        self.key = ("ppo", stack_key)
        self._stacked = StackedActors()

    def act_together(self, agents, members: np.ndarray, features,
                     action_masks: np.ndarray) -> np.ndarray:
        """Actions of ``agents`` (`PPOAgent`s) for their rows: members int64 (K,) (each
        row's agent, an index into ``agents``), features float32 tensor (K, F), masks bool
        (K, A) -> int64 (K,) (`skyjo_env.protocol.SharedActing`).

        Raises:
            ValueError: Agents of other architectures, or ``members`` out of range.
            PolicyInputError: Masks that do not fit, or a row without a legal action.
        """
        if all(agent.deterministic for agent in agents):
            return self._stacked.act([agent.actor for agent in agents], members, features,
                                     action_masks)
        members = np.asarray(members)
        chosen = np.empty(len(members), np.int64)
        for index, agent in enumerate(agents):
            rows = np.flatnonzero(members == index)
            if len(rows):
                chosen[rows] = agent.act_on_features(features[rows], action_masks[rows])
        return chosen


def load_ppo_agent(path: str | Path, rules: SkyjoRules, seed: int = 0) -> PPOAgent:
    """A `PPOAgent` from a checkpoint trained for ``rules``.

    The network is built from the checkpoint's metadata and its weights are read with
    ``weights_only=True`` (`load_policy`): loading runs no code from the file.

    Raises:
        CheckpointError: Missing or corrupt file, not a skyjo-rl checkpoint, other rules,
            another observation layout, or weights that do not fit the architecture.
    """
    metadata = read_metadata(path)
    check_compatible(metadata, rules, path)
    return PPOAgent(load_policy(path, metadata), name=network_label(path), seed=seed)


def network_label(path: str | Path) -> str:
    """The agent name of the network at ``path``: ``ppo:STEM``, except a training run's
    ``best.zip``, ``ppo:RUN/best`` (plain ``ppo:best`` would read as the spec of the
    strongest shipped network, `agents.registry.BEST_NETWORK`)."""
    path = Path(path)
    if path.stem == "best" and path.parent.name:
        return f"ppo:{path.parent.name}/{path.stem}"
    return f"ppo:{path.stem}"
