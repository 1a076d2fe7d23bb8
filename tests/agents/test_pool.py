"""Self-play snapshots (`agents.training.pool.frozen_copy`): a frozen copy of the learner
can be taken at any moment of a run, and training on does not change it."""

from __future__ import annotations

import torch
from sb3_contrib import MaskablePPO

from agents.training.pool import frozen_copy
from skyjo_env import SkyjoRules, SkyjoVecEnv

RULES = SkyjoRules(num_players=2)


def _model() -> MaskablePPO:
    return MaskablePPO("MlpPolicy", SkyjoVecEnv(num_envs=2, rules=RULES, seed=0), n_steps=8,
                       batch_size=16, policy_kwargs={"net_arch": [16]}, seed=0, device="cpu")


def _gradient_step(model: MaskablePPO) -> None:
    """What PPO's ``train`` leaves behind: the policy's last action distribution built from
    logits that carry a gradient graph (a run's last evaluation comes right after it)."""
    env = model.get_env()
    observations = torch.as_tensor(env.reset(), dtype=torch.float32)
    masks = env.action_masks()
    actions = torch.as_tensor(masks.argmax(axis=1))
    _, log_prob, _ = model.policy.evaluate_actions(observations, actions, action_masks=masks)
    (-log_prob.mean()).backward()
    model.policy.optimizer.step()


def test_frozen_copy__works_right_after_a_gradient_step_and_is_not_changed_by_training():
    model = _model()
    _gradient_step(model)
    last_distribution = model.policy.action_dist.distribution
    snapshot = frozen_copy(model, "snapshot")
    assert model.policy.action_dist.distribution is last_distribution  # the learner's, kept
    env = model.get_env()
    masks = env.action_masks()
    actions = snapshot.act(env.reset(), masks)
    assert masks[range(len(actions)), actions].all()  # the copy plays legal moves
    before = [p.detach().clone() for p in snapshot.model.policy.parameters()]
    _gradient_step(model)
    after = list(snapshot.model.policy.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(after, model.policy.parameters(), strict=True))
    assert not snapshot.model.policy.training
