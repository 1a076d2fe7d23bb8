"""A trained PPO policy as an `Agent` (`PPOAgent`), and `load_ppo_agent` for a checkpoint."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from agents.ppo.checkpoint import CheckpointError, check_compatible, load_model, read_metadata
from skyjo_env.core.rules import SkyjoRules


class PPOAgent:
    """A trained MaskablePPO policy behind the Agent protocol.

    Acts greedily (the most probable legal action) by default, so it needs no randomness;
    with ``deterministic=False`` it samples from its own torch generator.
    """

    def __init__(self, model, name: str = "ppo", deterministic: bool = True, seed: int = 0):
        import torch

        self.model = model
        self.policy = model.policy
        self.name = name
        self.deterministic = deterministic
        self.generator = torch.Generator().manual_seed(int(seed))

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Actions for a batch: observations float32 (N, O), masks bool (N, A) -> int64 (N,)."""
        import torch

        obs = torch.as_tensor(np.asarray(observations, dtype=np.float32))
        masks = np.asarray(action_masks, dtype=bool)
        if obs.ndim == 1:
            obs, masks = obs[None], masks.reshape(1, -1)
        with torch.no_grad():
            distribution = self.policy.get_distribution(obs, action_masks=masks)
            logits = distribution.distribution.logits
            if self.deterministic:
                actions = logits.argmax(dim=1)
            else:
                actions = torch.multinomial(logits.softmax(dim=1), 1, generator=self.generator)[:, 0]
        return actions.numpy().astype(np.int64)


def load_ppo_agent(path: str | Path, rules: SkyjoRules, seed: int = 0) -> PPOAgent:
    """A `PPOAgent` from a checkpoint trained for ``rules``.

    Raises:
        CheckpointError: Missing or corrupt file, not a skyjo-rl checkpoint, other rules,
            or another observation layout.
    """
    metadata = read_metadata(path)
    check_compatible(metadata, rules, path)
    model = load_model(path)
    space = model.observation_space
    if space.shape != (metadata["observation_size"],):
        raise CheckpointError(
            f"checkpoint {str(path)!r}: its network takes observations of shape {space.shape}, "
            f"its metadata says {metadata['observation_size']}"
        )
    return PPOAgent(model, name=f"ppo:{Path(path).stem}", seed=seed)
