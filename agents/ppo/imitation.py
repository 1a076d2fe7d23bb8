"""Imitation warm start: teach the PPO policy a teacher's moves before self-play.

PPO from scratch needs many millions of decisions to learn even which slot to swap a low
card into. Cloning a heuristic first (supervised cross-entropy on the teacher's legal
choices, the teacher in every seat of batched full games) gives PPO a policy that already
plays sensibly, and the reinforcement learning then improves on it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from skyjo_env.core import legal_action_mask, new_batch, reset, step
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationEncoder
from skyjo_env.protocol import Agent


def collect_demonstrations(
    rules: SkyjoRules, teachers: Sequence[Agent], games: int, seed: int, batch: int = 1024
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every decision of ``games`` full games, seat ``p`` played by ``teachers[p % k]``.

    Returns:
        ``(observations float32 (N, O), masks bool (N, A), actions int64 (N,))``.
    """
    encoder = ObservationEncoder(rules)
    observations, masks, actions = [], [], []
    rng = np.random.default_rng(seed)
    remaining = games
    while remaining > 0:
        size = min(batch, remaining)
        remaining -= size
        state = new_batch(rules, size)
        reset(state, rng)
        chosen = np.empty(size, np.int64)
        while not state.all_over:
            running = ~state.game_over
            mask = legal_action_mask(state)
            seen = encoder.encode(state, state.current_player)
            chosen[:] = -1
            for index, teacher in enumerate(teachers):
                rows = np.flatnonzero(running & (state.current_player % len(teachers) == index))
                if rows.size:
                    chosen[rows] = teacher.act(seen[rows], mask[rows])
            observations.append(seen[running])
            masks.append(mask[running])
            actions.append(chosen[running].copy())
            step(state, chosen)
    return np.concatenate(observations), np.concatenate(masks), np.concatenate(actions)


def actor_parameters(policy) -> list:
    """The parameters that shape the action distribution (not the value head)."""
    return [*policy.mlp_extractor.policy_net.parameters(), *policy.action_net.parameters()]


def clone_policy(
    policy,
    observations: np.ndarray,
    masks: np.ndarray,
    actions: np.ndarray,
    epochs: int,
    batch_size: int = 4096,
    learning_rate: float = 1e-3,
    seed: int = 0,
) -> dict[str, float]:
    """Fit the actor of a MaskablePPO policy to the demonstrations (masked cross-entropy).

    Args:
        policy: ``model.policy`` of a MaskablePPO (changed in place).
        observations: float32 (N, O). masks: bool (N, A). actions: int64 (N,).
        epochs: Passes over the data.
        batch_size: Minibatch size.
        learning_rate: Adam step size (a separate optimizer; PPO's is untouched).
        seed: Shuffling seed.

    Returns:
        ``{"loss", "accuracy"}`` on the last epoch (accuracy of the greedy action).
    """
    import torch

    generator = np.random.default_rng(seed)
    optimizer = torch.optim.Adam(actor_parameters(policy), lr=learning_rate)
    obs_t = torch.as_tensor(observations)
    mask_t = torch.as_tensor(masks)
    act_t = torch.as_tensor(actions)
    policy.set_training_mode(True)
    loss_sum = correct = seen = 0.0
    for _ in range(epochs):
        order = torch.as_tensor(generator.permutation(len(actions)))
        loss_sum = correct = seen = 0.0
        for start in range(0, len(actions), batch_size):
            rows = order[start : start + batch_size]
            features = policy.extract_features(obs_t[rows], policy.pi_features_extractor)
            logits = policy.action_net(policy.mlp_extractor.forward_actor(features))
            logits = logits.masked_fill(~mask_t[rows], -1e8)
            loss = torch.nn.functional.cross_entropy(logits, act_t[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_sum += float(loss.detach()) * len(rows)
            correct += float((logits.argmax(dim=1) == act_t[rows]).sum())
            seen += len(rows)
    policy.set_training_mode(False)
    return {"loss": loss_sum / seen, "accuracy": correct / seen}
