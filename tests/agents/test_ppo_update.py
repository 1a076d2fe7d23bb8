"""The trainer's PPO update over features computed once per rollout
(`agents.training.ppo_update`): the same network bit for bit, the extractor run once per
chunk of the buffer instead of once per minibatch and pass, everything put back."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from run_logs import evaluations

from agents.ppo.checkpoint import load_policy
from agents.training import trainer as trainer_module
from agents.training.config import TrainConfig
from agents.training.ppo_update import buffer_features, computes_features_once, features_once
from agents.training.start import prepare_start
from agents.training.trainer import Trainer, train

SMALL = dict(
    num_players=3,
    total_timesteps=2048,
    n_envs=16,
    n_steps=64,
    batch_size=256,
    n_epochs=3,
    eval_interval=1024,
    eval_games=4,
    checkpoint_interval=1024,
    net_arch=[32, 32],
    features="grid_feeding_waits",
    imitation_games=8,
    imitation_epochs=1,
    progress=False,
)


def _plain_maskable_ppo():
    from sb3_contrib import MaskablePPO

    return MaskablePPO


def _weights(path):
    return load_policy(path).state_dict()


def test_features_once__trains_the_same_network_bit_for_bit(tmp_path, monkeypatch):
    config = TrainConfig(**SMALL)
    ours = train(config, tmp_path / "ours")
    monkeypatch.setattr(trainer_module, "trainer_ppo_class", _plain_maskable_ppo)
    plain = train(config, tmp_path / "plain")
    assert ours["timesteps"] == plain["timesteps"] == 2048
    ours_weights = _weights(tmp_path / "ours" / "checkpoints" / "last.zip")
    plain_weights = _weights(tmp_path / "plain" / "checkpoints" / "last.zip")
    assert ours_weights.keys() == plain_weights.keys()
    for name, tensor in ours_weights.items():
        assert torch.equal(tensor, plain_weights[name]), name
    assert evaluations(tmp_path / "ours") == evaluations(tmp_path / "plain")


def _one_rollout_model(tmp_path, **changes):
    config = TrainConfig(**{**SMALL, "imitation_games": 0, **changes})
    trainer = Trainer(prepare_start(config), tmp_path)
    trainer.build_env()
    model = trainer.build_model()
    model.tensorboard_log = None
    return model


def _extractor_calls_in_update(model) -> int:
    """How many times the policy's features extractor runs inside the update (``train``)
    of one rollout-and-update."""
    extractor = model.policy.features_extractor
    counter = {"calls": 0, "updating": False}

    def count(*_):
        counter["calls"] += counter["updating"]

    hook = extractor.register_forward_hook(count)
    update = model.train

    def counted_update():
        counter["updating"] = True
        try:
            update()
        finally:
            counter["updating"] = False

    model.train = counted_update
    try:
        model.learn(model.n_steps * model.env.num_envs)
    finally:
        hook.remove()
    return counter["calls"]


def test_features_once__runs_the_extractor_once_per_chunk_not_per_minibatch(tmp_path):
    model = _one_rollout_model(tmp_path)
    rows = model.n_steps * model.env.num_envs
    assert _extractor_calls_in_update(model) == math.ceil(rows / model.batch_size)


def test_features_once__plain_maskable_ppo_runs_it_per_minibatch_and_pass(tmp_path,
                                                                          monkeypatch):
    # the count the test above improves on, measured the same way
    monkeypatch.setattr(trainer_module, "trainer_ppo_class", _plain_maskable_ppo)
    model = _one_rollout_model(tmp_path)
    rows = model.n_steps * model.env.num_envs
    assert _extractor_calls_in_update(model) == model.n_epochs * rows // model.batch_size


class _Buffer:
    """A filled rollout buffer's part that `features_once` touches."""

    def __init__(self, observations):
        self.observations = observations
        self.generator_ready = False

    @staticmethod
    def swap_and_flatten(array):
        return array.swapaxes(0, 1).reshape(-1, *array.shape[2:])


def test_features_once__puts_back_extractor_and_observations_after_an_error(tmp_path):
    model = _one_rollout_model(tmp_path)
    policy = model.policy
    extractor = policy.features_extractor
    observations = np.zeros((4, 3, policy.observation_space.shape[0]), np.float32)
    buffer = _Buffer(observations)
    with pytest.raises(RuntimeError, match="inside"):
        with features_once(policy, buffer, chunk=5):
            assert isinstance(policy.features_extractor, torch.nn.Identity)
            assert buffer.observations.shape == (4, 3, extractor.features_dim)
            raise RuntimeError("inside")
    assert policy.features_extractor is extractor
    assert buffer.observations is observations


def test_features_once__gives_the_extractor_rows_whatever_the_chunk(tmp_path):
    model = _one_rollout_model(tmp_path)
    model.learn(model.n_steps * model.env.num_envs)  # observations of real games
    extractor = model.policy.features_extractor
    rows = model.rollout_buffer.observations  # flattened by the update: (N, O)
    observations = rows.reshape(model.n_steps, -1, rows.shape[-1])
    with torch.no_grad():
        direct = extractor(torch.from_numpy(rows[:300])).numpy()
    for chunk in (1, 7, 256, 4096):
        features = buffer_features(extractor, observations, chunk)
        assert features.shape == (*observations.shape[:2], extractor.features_dim)
        assert np.array_equal(features.reshape(len(rows), -1)[:300], direct)


def test_computes_features_once__not_for_raw_observations(tmp_path):
    raw = _one_rollout_model(tmp_path / "raw", features="raw")
    grid = _one_rollout_model(tmp_path / "grid", features="grid")
    assert not computes_features_once(raw.policy)
    assert computes_features_once(grid.policy)
    observations = np.zeros((2, 2, raw.policy.observation_space.shape[0]), np.float32)
    buffer = _Buffer(observations)
    with features_once(raw.policy, buffer):
        assert buffer.observations is observations
