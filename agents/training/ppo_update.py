"""The trainer's MaskablePPO: sb3-contrib's, with the policy's features computed once per
update instead of once per minibatch and pass.

SB3's update runs the whole policy on each minibatch of each of its ``n_epochs`` passes
over the rollout, the features extractor included. Our grid features
(`agents.ppo.features.GridFeaturesExtractor`) have no parameters and are a function of
each observation row alone (they declare it with ``function_key``), so the features of a
row are the same in every pass: `features_once` computes them over the rollout buffer
once, in chunks, and lets the update run on them with the extractor stepped over. The
rows are bit-identical whatever rows they are computed with
(tests/agents/test_shared_features.py), so the update, and the trained network, are the
same bit for bit (tests/agents/test_ppo_update.py); only the time changes
(benchmarks/ppo_update.py).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch


def computes_features_once(policy) -> bool:
    """Whether `features_once` applies to ``policy``: one features extractor shared by
    the actor and the critic, declaring itself a function of each row alone
    (``function_key``; ``features: raw`` has none, and nothing to save)."""
    return (bool(getattr(policy, "share_features_extractor", False))
            and getattr(policy.features_extractor, "function_key", None) is not None)


def buffer_features(extractor: torch.nn.Module, observations: np.ndarray,
                    chunk: int) -> np.ndarray:
    """The features of every row of a rollout buffer's observations.

    Args:
        extractor: A parameter-free features extractor of rows (``function_key``).
        observations: float32 (..., O), e.g. (n_steps, n_envs, O).
        chunk: Rows per extractor call (bounds the memory of its intermediates).

    Returns:
        float32 (..., F), in the same leading shape.
    """
    rows = observations.reshape(-1, observations.shape[-1])
    with torch.no_grad():
        parts = [extractor(torch.from_numpy(rows[start:start + chunk])).numpy()
                 for start in range(0, len(rows), chunk)]
    features = np.concatenate(parts) if len(parts) > 1 else parts[0]
    return features.reshape(*observations.shape[:-1], features.shape[-1])


@contextmanager
def features_once(policy, buffer, chunk: int = 4096) -> Iterator[None]:
    """Within the block, ``buffer.observations`` hold the policy's features and the
    policy's features extractor is an identity, so an update over the buffer computes the
    features once instead of once per minibatch and pass. Both are put back at the end,
    also on an error. A policy `computes_features_once` refuses, or a buffer whose arrays
    ``get`` has flattened already, is left alone.

    Args:
        policy: A ``MaskableActorCriticPolicy``.
        buffer: Its ``MaskableRolloutBuffer``, filled (observations float32
            (n_steps, n_envs, O), not yet flattened by ``get``).
        chunk: Rows per extractor call.
    """
    if not computes_features_once(policy) or buffer.generator_ready:
        yield
        return
    extractor = policy.features_extractor
    observations = buffer.observations
    buffer.observations = buffer_features(extractor, observations, chunk)
    # the actor and critic share this module (share_features_extractor): one swap is both
    policy.features_extractor = torch.nn.Identity()
    try:
        yield
    finally:
        policy.features_extractor = extractor
        # SB3's ``get`` flattens the buffer's arrays in place once; keep it consistent
        buffer.observations = (buffer.swap_and_flatten(observations)
                               if buffer.generator_ready else observations)


@functools.cache
def trainer_ppo_class() -> type:
    """sb3-contrib's ``MaskablePPO`` whose ``train`` (the update after each rollout) runs
    inside `features_once`; everything else is MaskablePPO's."""
    from sb3_contrib import MaskablePPO

    class FeaturesOncePPO(MaskablePPO):
        """MaskablePPO computing the policy's features once per update (`features_once`)."""

        def train(self) -> None:
            """MaskablePPO's update, over features computed once (`features_once`)."""
            with features_once(self.policy, self.rollout_buffer, self.batch_size):
                super().train()

    return FeaturesOncePPO
