"""PPO opponents sharing their features (`agents.ppo.inference.PolicyFeatures`): every
features row depends on its own observation alone, acting from shared rows chooses as
acting from the observations, and training games with snapshot opponents are the same
games with and without the sharing."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces

from agents.baselines.heuristics import EVAgent
from agents.ppo.features import GridFeaturesExtractor, features_extractor_kwargs
from agents.ppo.inference import PolicyFeatures, PolicyInputError
from agents.ppo.policy import PPOAgent, load_ppo_agent
from agents.training.imitation import collect_demonstrations
from skyjo_env import SkyjoVecEnv
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationLayout
from skyjo_env.protocol import sample_legal

MODELS = Path(__file__).resolve().parents[2] / "models"
FEATURES = ["grid", "grid_feeding", "grid_feeding_waits", "grid_feeding_waits_risk"]


def extractor(features: str, rules: SkyjoRules) -> GridFeaturesExtractor:
    """The features extractor a policy with ``features`` gets at ``rules``' table."""
    size = ObservationLayout(rules).size
    space = spaces.Box(-np.inf, np.inf, (size,), np.float32)
    return GridFeaturesExtractor(space, **features_extractor_kwargs(features, rules)[
        "features_extractor_kwargs"])


@pytest.fixture(scope="module", params=[2, 4, 8], ids=["2p", "4p", "8p"])
def ev_observations(request):
    """``(rules, observations float32 (N, O))`` of ev self-play at 2, 4 and 8 players."""
    rules = SkyjoRules(num_players=request.param)
    observations, _, _ = collect_demonstrations(rules, [EVAgent(rules)], 2, 3)
    return rules, observations


@pytest.mark.parametrize("features", FEATURES)
def test_features_extractor__each_row_is_the_same_whatever_rows_it_is_computed_with(
        ev_observations, features):
    rules, observations = ev_observations
    compute = extractor(features, rules)
    whole = compute(torch.as_tensor(observations))
    rng = np.random.default_rng(0)
    for _ in range(60):
        rows = rng.choice(len(observations), int(rng.integers(1, 300)), replace=False)
        assert torch.equal(compute(torch.as_tensor(observations[rows])), whole[rows])


def test_features_extractor__keys_are_equal_exactly_for_the_same_function():
    four, five = SkyjoRules(num_players=4), SkyjoRules(num_players=5)
    key = extractor("grid_feeding_waits", four).function_key
    assert extractor("grid_feeding_waits", four).function_key == key
    assert extractor("grid_feeding", four).function_key != key
    assert extractor("grid_feeding_waits", five).function_key != key
    assert extractor("grid_feeding_waits", SkyjoRules(num_players=4, row_elimination=True)
                     ).function_key != key


@pytest.fixture(scope="module")
def four_players():
    """``(agent, observations (N, O), masks (N, A), rules)``: ppo_4p on ev self-play."""
    rules = SkyjoRules(num_players=4)
    observations, masks, _ = collect_demonstrations(rules, [EVAgent(rules)], 3, 4)
    return load_ppo_agent(MODELS / "ppo_4p.zip", rules), observations, masks, rules


@pytest.mark.parametrize("deterministic", [True, False], ids=["greedy", "sampled"])
def test_ppo_agent__acting_on_shared_feature_rows_chooses_as_acting_on_observations(
        four_players, deterministic):
    agent, observations, masks, _ = four_players
    features = agent.shared_features(observations)
    from_observations = PPOAgent(agent.policy, deterministic=deterministic, seed=3)
    from_features = PPOAgent(agent.policy, deterministic=deterministic, seed=3)
    rng = np.random.default_rng(1)
    for _ in range(20):
        rows = rng.choice(len(observations), int(rng.integers(1, 40)), replace=False)
        np.testing.assert_array_equal(from_features.act_on_features(features[rows], masks[rows]),
                                      from_observations.act(observations[rows], masks[rows]))


def test_ppo_agent__acting_on_features_refuses_masks_that_do_not_fit(four_players):
    agent, observations, masks, _ = four_players
    features = agent.shared_features(observations[:3])
    with pytest.raises(PolicyInputError, match=r"action masks of shape \(2, \d+\) for 3"):
        agent.act_on_features(features, masks[:2])
    empty = masks[:3].copy()
    empty[2] = False
    with pytest.raises(PolicyInputError, match="action mask row 2 has no legal action"):
        agent.act_on_features(features, empty)
    with pytest.raises(PolicyInputError, match=r"observations of shape \(3, \d+\)"):
        agent.shared_features(observations[:3, 1:])


def snapshots(base: PPOAgent, count: int, sharing: bool = True) -> list[PPOAgent]:
    """``count`` sampling agents over copies of ``base``'s policy, each with its own action
    head (noise added to its bias) and generator, as a training pool's snapshots;
    ``sharing=False``: without shared features (they act from their observations)."""
    agents = []
    for k in range(count):
        policy = copy.deepcopy(base.policy)
        noise = torch.randn(policy.action_net.bias.shape, generator=torch.Generator().manual_seed(k))
        with torch.no_grad():
            policy.action_net.bias.add_(noise)
        agent = PPOAgent(policy, name=f"snapshot{k}", deterministic=False, seed=k)
        if not sharing:
            agent.shared_features = None
        agents.append(agent)
    return agents


def test_vec_env__ppo_snapshots_sharing_features_play_the_games_they_play_alone(
        four_players, monkeypatch):
    base = four_players[0]
    calls = []
    features_call = PolicyFeatures.__call__

    def counted(self, observations):
        calls.append(len(observations))
        return features_call(self, observations)

    def played(opponents) -> list[np.ndarray]:
        venv = SkyjoVecEnv(12, num_players=4, opponents=opponents, seed=9)
        trace = [venv.reset()]
        rng = np.random.default_rng(2)
        for _ in range(60):
            observations, rewards, dones, _ = venv.step(sample_legal(venv.action_masks(), rng))
            trace += [observations, rewards, dones]
        return trace

    monkeypatch.setattr(PolicyFeatures, "__call__", counted)
    shared = played(snapshots(base, 3))
    assert calls  # the snapshots did share
    alone = played(snapshots(base, 3, sharing=False))
    for got, expected in zip(shared, alone, strict=True):
        np.testing.assert_array_equal(got, expected)
