"""Imitation warm start: a cloned policy agrees with its teacher far above chance."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.registry import make_agent
from agents.training.imitation import clone_policy, collect_demonstrations
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.vec_env import SkyjoVecEnv

RULES = SkyjoRules()


def _agreement(policy, observations, masks, actions) -> float:
    with torch.no_grad():
        distribution = policy.get_distribution(torch.as_tensor(observations), action_masks=masks)
        chosen = distribution.distribution.logits.argmax(dim=1).numpy()
    return float((chosen == actions).mean())


def test_collect_demonstrations__records_legal_teacher_moves():
    teacher = make_agent("ev", RULES, seed=0)
    observations, masks, actions = collect_demonstrations(RULES, [teacher], games=4, seed=1)
    assert observations.shape == (len(actions), 108) and masks.shape == (len(actions), 27)
    assert masks[np.arange(len(actions)), actions].all()
    again = collect_demonstrations(RULES, [teacher], games=4, seed=1)
    np.testing.assert_array_equal(actions, again[2])


@pytest.mark.slow  # network fitting
def test_clone_policy__agrees_with_ev_on_held_out_decisions():
    from sb3_contrib import MaskablePPO

    torch.manual_seed(0)
    teacher = make_agent("ev", RULES, seed=0)
    train = collect_demonstrations(RULES, [teacher], games=100, seed=1)
    held_out = collect_demonstrations(RULES, [teacher], games=30, seed=2)
    model = MaskablePPO("MlpPolicy", SkyjoVecEnv(num_envs=2, rules=RULES, seed=0),
                        policy_kwargs={"net_arch": [64, 64]}, device="cpu", seed=0)
    before = _agreement(model.policy, *held_out)
    stats = clone_policy(model.policy, *train, epochs=6, batch_size=1024, seed=3)
    after = _agreement(model.policy, *held_out)
    # chance: a uniform pick among the legal actions
    masks = held_out[1]
    chance = float((1.0 / masks.sum(axis=1)).mean())
    assert 0.5 < stats["accuracy"] <= 1.0
    # measured: about 0.76 against a chance of 0.28 (0.27 before cloning)
    assert after > chance + 0.35, (before, after, chance)
    assert after > before + 0.3, (before, after, chance)


def test_clone_policy__anchor_keeps_the_policy_closer_to_itself():
    from sb3_contrib import MaskablePPO

    teacher = make_agent("ev", RULES, seed=0)
    observations, masks, actions = collect_demonstrations(RULES, [teacher], games=20, seed=1)
    moved = {}
    for anchor in (0.0, 0.9):
        torch.manual_seed(0)
        model = MaskablePPO("MlpPolicy", SkyjoVecEnv(num_envs=2, rules=RULES, seed=0),
                            policy_kwargs={"net_arch": [32]}, device="cpu", seed=0)
        with torch.no_grad():
            before = model.policy.get_distribution(
                torch.as_tensor(observations), action_masks=masks).distribution.probs
        clone_policy(model.policy, observations, masks, actions, epochs=3, batch_size=256,
                     learning_rate=3e-3, seed=1, anchor=anchor)
        with torch.no_grad():
            after = model.policy.get_distribution(
                torch.as_tensor(observations), action_masks=masks).distribution.probs
        moved[anchor] = float((after - before).abs().sum(dim=1).mean())
    # the anchored fit moves the action distribution less than plain cloning
    assert moved[0.9] < 0.6 * moved[0.0], moved
    with pytest.raises(ValueError, match="anchor=1.0 is invalid"):
        clone_policy(model.policy, observations, masks, actions, epochs=1, anchor=1.0)


@pytest.mark.slow  # network fitting
def test_clone_policy__target_probabilities_are_the_fitted_distribution():
    from sb3_contrib import MaskablePPO

    teacher = make_agent("ev", RULES, seed=0)
    observations, masks, actions = collect_demonstrations(RULES, [teacher], games=10, seed=1)
    # a target that splits each row's mass 0.7 / 0.3 between the teacher's move and the
    # lowest other legal action: a hard-label fit would push the second one towards 0
    other = np.argmax(masks & (np.arange(masks.shape[1]) != actions[:, None]), axis=1)
    two_way = masks.sum(axis=1) > 1
    observations, masks, actions, other = (observations[two_way], masks[two_way],
                                           actions[two_way], other[two_way])
    targets = np.zeros(masks.shape)
    targets[np.arange(len(actions)), actions] = 0.7
    targets[np.arange(len(actions)), other] = 0.3
    torch.manual_seed(0)
    model = MaskablePPO("MlpPolicy", SkyjoVecEnv(num_envs=2, rules=RULES, seed=0),
                        policy_kwargs={"net_arch": [64]}, device="cpu", seed=0)
    clone_policy(model.policy, observations, masks, actions, epochs=40, batch_size=128,
                 learning_rate=1e-2, seed=1, target_probabilities=targets)
    with torch.no_grad():
        probs = model.policy.get_distribution(
            torch.as_tensor(observations), action_masks=masks).distribution.probs.numpy()
    rows = np.arange(len(actions))
    # measured: 0.62 and 0.33 on average, a median ratio of 2.1 (the target's: 2.33); a
    # uniform start gives 1 / legal actions to each, a hard-label fit a ratio far above 4
    assert 0.55 < probs[rows, actions].mean() < 0.8
    assert 0.2 < probs[rows, other].mean() < 0.45
    assert 1.5 < np.median(probs[rows, actions] / probs[rows, other]) < 4
    with pytest.raises(ValueError, match="anchor must be 0"):
        clone_policy(model.policy, observations, masks, actions, epochs=1, anchor=0.5,
                     target_probabilities=targets)


@pytest.mark.slow  # network fitting
def test_trainer_warm_start__shows_its_games_and_cloning_as_they_run(tmp_path, capsys):
    from agents.training.config import TrainConfig
    from agents.training.start import prepare_start
    from agents.training.trainer import Trainer

    config = TrainConfig(n_envs=8, n_steps=32, batch_size=256, imitation_games=80,
                         imitation_epochs=2, eval_interval=0, progress=True)
    trainer = Trainer(prepare_start(config), tmp_path / "run")
    trainer.build_env()
    trainer.model = trainer.build_model()
    trainer.warm_start()
    captured = capsys.readouterr()
    # bars (tqdm writes to stderr) over the teacher's games, then over the cloning epochs
    assert "warm start: ev games" in captured.err and "80/80" in captured.err, captured.err
    assert "warm start: cloning on" in captured.err and "2/2" in captured.err, captured.err
    assert "agreement" in captured.out
