"""PPO opponents sharing their features (`agents.ppo.inference.PolicyFeatures`): every
features row depends on its own observation alone, acting from shared rows chooses as
acting from the observations, and training games with snapshot opponents are the same
games with and without the sharing. Greedy snapshots acting together
(`agents.ppo.inference.StackedActors`) choose as each would on its own wherever its two
best legal actions are not within float32 rounding of each other."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces

from agents.baselines.heuristics import EVAgent
from agents.ppo.checkpoint import build_policy, checkpoint_metadata
from agents.ppo.features import GridFeaturesExtractor, features_extractor_kwargs
from agents.ppo.inference import PolicyFeatures, PolicyInputError, StackedActors
from agents.ppo.policy import PPOAgent, StackedActing, load_ppo_agent
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


#: Two legal logits closer than this may be ordered differently by a batched product.
NEAR_TIE = 1e-4


def greedy_snapshots(base: PPOAgent, count: int) -> list[PPOAgent]:
    """``count`` greedy agents over copies of ``base``'s policy, noise added to every
    parameter, so that each has its own weights."""
    agents = []
    for k in range(count):
        policy = copy.deepcopy(base.policy)
        generator = torch.Generator().manual_seed(100 + k)
        with torch.no_grad():
            for parameter in policy.parameters():
                parameter.add_(0.02 * torch.randn(parameter.shape, generator=generator))
        agents.append(PPOAgent(policy, name=f"greedy{k}"))
    return agents


def apart_rows(agent: PPOAgent, features: torch.Tensor, masks: np.ndarray) -> np.ndarray:
    """bool (N,): the rows whose two best legal logits under ``agent`` (computed on its
    own) differ by more than `NEAR_TIE` (a single legal action counts as apart)."""
    with torch.inference_mode():
        logits = agent.actor.logits_from_features(features, torch.from_numpy(masks)).numpy()
    legal = np.where(masks, logits, -np.inf)
    top_two = -np.sort(-legal, axis=1)[:, :2]
    return ~np.isfinite(top_two[:, 1]) | (top_two[:, 0] - top_two[:, 1] > NEAR_TIE)


def check_as_each_alone(agents, members, features, masks, chosen) -> int:
    """Assert that ``chosen`` is each row's agent's own choice wherever its two best
    logits are apart; returns how many rows were checked."""
    checked = 0
    for index, agent in enumerate(agents):
        rows = np.flatnonzero(members == index)
        if not len(rows):
            continue
        alone = agent.act_on_features(features[rows], masks[rows])
        apart = apart_rows(agent, features[rows], masks[rows])
        np.testing.assert_array_equal(chosen[rows][apart], alone[apart])
        checked += int(apart.sum())
    return checked


def random_split(rng: np.random.Generator, rows: int, agents: int) -> tuple[np.ndarray, np.ndarray]:
    """Some of ``rows`` row numbers, and each one's agent: 1 to 20 rows for each agent,
    at times a single row each."""
    counts = np.ones(agents, np.int64) if rng.random() < 0.25 else rng.integers(1, 21, agents)
    picked = rng.choice(rows, int(counts.sum()), replace=False)
    return picked, rng.permutation(np.repeat(np.arange(agents), counts))


def test_stacked_actors__choose_as_each_actor_alone_wherever_its_best_logits_are_apart(
        four_players):
    base, observations, masks, _ = four_players
    agents = greedy_snapshots(base, 8)
    features = agents[0].shared_features(observations)
    acting = agents[0].shared_acting
    rng = np.random.default_rng(4)
    checked = total = 0
    for _ in range(60):
        count = int(rng.integers(2, 9))
        rows, members = random_split(rng, len(observations), count)
        chosen = acting.act_together(agents[:count], members, features[rows], masks[rows])
        assert chosen.dtype == np.int64 and chosen.shape == rows.shape
        checked += check_as_each_alone(agents[:count], members, features[rows], masks[rows],
                                       chosen)
        total += len(rows)
    assert checked >= 0.99 * total  # near-ties are rare


def test_stacked_actors__a_subset_of_a_built_stack_chooses_as_a_stack_of_just_it(four_players):
    base, observations, masks, _ = four_players
    actors = [agent.actor for agent in greedy_snapshots(base, 6)]
    features = base.shared_features(observations)
    rng = np.random.default_rng(5)
    stacked = StackedActors()
    rows, members = random_split(rng, len(observations), 6)
    stacked.act(actors, members, features[rows], masks[rows])
    for _ in range(10):
        subset = sorted(rng.choice(6, 3, replace=False))
        rows, members = random_split(rng, len(observations), 3)
        np.testing.assert_array_equal(
            stacked.act([actors[k] for k in subset], members, features[rows], masks[rows]),
            StackedActors().act([actors[k] for k in subset], members, features[rows],
                                masks[rows]))


def test_stacked_actors__weights_changed_in_place_are_used_at_the_next_call(four_players):
    base, observations, masks, _ = four_players
    agents = greedy_snapshots(base, 3)
    features = base.shared_features(observations)
    members = np.arange(len(observations)) % 3
    acting = agents[0].shared_acting
    before = acting.act_together(agents, members, features, masks)
    with torch.no_grad():  # as an optimizer step does: in place
        for parameter in agents[1].policy.parameters():
            parameter.mul_(-1.0)
    after = acting.act_together(agents, members, features, masks)
    assert (after[members == 1] != before[members == 1]).any()
    np.testing.assert_array_equal(after[members != 1], before[members != 1])
    assert check_as_each_alone(agents, members, features, masks, after) > 0


def test_stacked_acting__sampling_agents_choose_exactly_as_one_by_one(four_players):
    base, observations, masks, _ = four_players
    together = snapshots(base, 3)
    alone = snapshots(base, 3)
    features = base.shared_features(observations)
    members = np.random.default_rng(6).integers(3, size=len(observations))
    chosen = together[0].shared_acting.act_together(together, members, features, masks)
    for index, agent in enumerate(alone):
        rows = np.flatnonzero(members == index)
        np.testing.assert_array_equal(chosen[rows],
                                      agent.act_on_features(features[rows], masks[rows]))


def test_stacked_actors__bad_members_and_masks_are_refused(four_players):
    base, observations, masks, _ = four_players
    actors = [agent.actor for agent in greedy_snapshots(base, 2)]
    features = base.shared_features(observations[:4])
    with pytest.raises(ValueError, match=r"members must be 4 indices into 2 actors, got "
                                         r"shape \(4,\) of int64"):
        StackedActors().act(actors, np.array([0, 1, 2, 0]), features, masks[:4])
    with pytest.raises(PolicyInputError, match=r"action masks of shape \(3, \d+\) for 4"):
        StackedActors().act(actors, np.array([0, 1, 1, 0]), features, masks[:3])
    bfloat16 = PPOAgent(base.policy, precision="bfloat16").actor
    with pytest.raises(ValueError, match="StackedActors needs float32 actors of one "
                                         "stackable architecture"):
        StackedActors().act([actors[0], bfloat16], np.array([0, 1, 1, 0]), features, masks[:4])


def small_policy(features: str, rules: SkyjoRules, seed: int):
    """A freshly initialised tanh policy (one hidden layer of 16) with ``features``."""
    torch.manual_seed(seed)
    return build_policy(checkpoint_metadata(
        rules, 0, policy={"net_arch": [16], "activation": "tanh", "features": features}))


def test_ppo_agent__acting_together_is_offered_only_with_shared_features_in_float32(
        four_players):
    base, observations, masks, rules = four_players
    assert isinstance(base.shared_acting, StackedActing)
    assert PPOAgent(base.policy, precision="bfloat16").shared_acting is None
    assert PPOAgent(small_policy("raw", rules, 0)).shared_acting is None
    tanh = [PPOAgent(small_policy("grid", rules, seed)) for seed in range(3)]
    assert tanh[0].shared_acting.key == tanh[1].shared_acting.key != base.shared_acting.key
    features = tanh[0].shared_features(observations)
    members = np.arange(len(observations)) % 3
    chosen = tanh[0].shared_acting.act_together(tanh, members, features, masks)
    # a fresh action head gives small logits: more near-ties than a trained one
    assert check_as_each_alone(tanh, members, features, masks, chosen) > 0.9 * len(members)


def test_vec_env__greedy_ppo_snapshots_acting_together_choose_as_each_would(
        four_players, monkeypatch):
    base = four_players[0]
    calls = []
    act_together = StackedActing.act_together

    def checked(self, agents, members, features, action_masks):
        chosen = act_together(self, agents, members, features, action_masks)
        calls.append(check_as_each_alone(agents, np.asarray(members), features, action_masks,
                                         chosen))
        return chosen

    monkeypatch.setattr(StackedActing, "act_together", checked)
    venv = SkyjoVecEnv(24, num_players=4, opponents=greedy_snapshots(base, 3), seed=9)
    venv.reset()
    rng = np.random.default_rng(2)
    for _ in range(40):
        venv.step(sample_legal(venv.action_masks(), rng))
    assert len(calls) > 40 and sum(calls) > 0


def test_stacked_actors__keep_recently_used_actors_and_drop_idle_ones_at_a_rebuild(
        four_players):
    base, observations, masks, _ = four_players
    actors = [agent.actor for agent in greedy_snapshots(base, 6)]
    features = base.shared_features(observations[:8])
    members = np.arange(8) % 2
    stacked = StackedActors()

    def act(pair):
        return stacked.act([actors[k] for k in pair], members, features, masks[:8])

    for _ in range(61):
        act([0, 1])  # calls 1-61
    act([2, 3])  # call 62, a rebuild: 0 and 1 stay
    for _ in range(7):
        act([2, 3])  # calls 63-69: no rebuild
    act([4, 2])  # call 70, a rebuild: 0 and 1 (last used at call 61) and 3 stay
    assert {id(a) for a in stacked._actors} == {id(actors[k]) for k in range(5)}
    for _ in range(StackedActors.KEEP_CALLS):
        act([4, 2])  # calls 71-134: no rebuild
    act([5, 2])  # call 135, a rebuild: 0, 1 and 3, idle for 64 calls or more, leave
    assert {id(a) for a in stacked._actors} == {id(actors[k]) for k in (2, 4, 5)}
