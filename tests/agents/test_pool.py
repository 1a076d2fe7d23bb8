"""The opponent pool (`agents.training.pool`): draws per seat or per table from the mix,
and self-play snapshots (`frozen_copy`): a frozen copy of the learner can be taken at any
moment of a run, and training on does not change it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

from agents.ppo.policy import PPOAgent
from agents.training.config import TrainConfig, TrainConfigError
from agents.training.pool import OpponentPool, frozen_copy
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


def _pool(mix: dict[str, float], draw: str, num_players: int = 6) -> OpponentPool:
    config = TrainConfig(num_players=num_players, opponent_mix=mix, opponent_draw=draw)
    return OpponentPool(config, SkyjoRules(num_players=num_players))


def _kinds(opponents: list) -> list[str]:
    return [opponent.name for opponent in opponents]


def test_opponent_pool__table_draw_seats_one_kind_at_every_opponent_seat():
    pool = _pool({"greedy": 0.3, "ev": 0.7}, "table")
    rng = np.random.default_rng(7)
    tables = [_kinds(pool(rng)) for _ in range(2000)]
    assert all(len(table) == 5 and len(set(table)) == 1 for table in tables)
    all_greedy = sum(table[0] == "greedy" for table in tables) / len(tables)
    assert abs(all_greedy - 0.3) < 0.04  # the mix's weight, per table (4 sigma ~ 0.041)


def test_opponent_pool__seat_draw_mixes_kinds_within_a_table():
    pool = _pool({"greedy": 0.3, "ev": 0.7}, "seat")
    rng = np.random.default_rng(7)
    tables = [_kinds(pool(rng)) for _ in range(2000)]
    seats = [kind for table in tables for kind in table]
    assert abs(seats.count("greedy") / len(seats) - 0.3) < 0.02
    pure = sum(len(set(table)) == 1 for table in tables) / len(tables)
    assert pure < 0.25  # 0.3**5 + 0.7**5 = 0.17 of tables are pure when seats draw alone


def test_opponent_pool__seat_draw_uses_the_generator_as_recipes_were_trained_with():
    # the draws of every run made before opponent_draw existed: one kind per seat, then
    # for self one snapshot index, from the same generator in that order
    pool = _pool({"random": 0.1, "greedy": 0.2, "ev": 0.4, "self": 0.3}, "seat")
    for i in range(3):
        pool.add_snapshot(PPOAgent(_model(), name=f"snap{i}"))
    kinds = ["random", "greedy", "ev", "self"]
    weights = np.array([0.1, 0.2, 0.4, 0.3])
    reference_rng, rng = np.random.default_rng(11), np.random.default_rng(11)
    for _ in range(200):
        expected = []
        for _seat in range(5):
            kind = kinds[reference_rng.choice(4, p=weights / weights.sum())]
            expected.append(f"snap{reference_rng.integers(3)}" if kind == "self" else kind)
        assert _kinds(pool(rng)) == expected


def test_opponent_pool__table_draw_of_self_gives_each_seat_its_own_snapshot():
    pool = _pool({"self": 1.0}, "table", num_players=4)
    rng = np.random.default_rng(0)
    assert _kinds(pool(rng)) == ["greedy"] * 3  # no snapshot yet (and no ev in the mix)
    snapshots = [PPOAgent(_model(), name=f"snap{i}") for i in range(4)]
    for snapshot in snapshots:
        pool.add_snapshot(snapshot)
    tables = [_kinds(pool(rng)) for _ in range(200)]
    assert any(len(set(table)) > 1 for table in tables)
    assert {kind for table in tables for kind in table} == {f"snap{i}" for i in range(4)}


def test_opponent_pool__a_stage_switches_the_draw_mode():
    pool = _pool({"greedy": 0.5, "ev": 0.5}, "seat")
    pool.set_mix(TrainConfig(num_players=6, opponent_mix={"greedy": 0.5, "ev": 0.5},
                             opponent_draw="table"))
    rng = np.random.default_rng(3)
    assert all(len(set(_kinds(pool(rng)))) == 1 for _ in range(300))


def test_train_config__rejects_an_unknown_opponent_draw_naming_the_choices():
    with pytest.raises(TrainConfigError, match="opponent_draw.*'seat', 'table'"):
        TrainConfig(opponent_draw="game")
