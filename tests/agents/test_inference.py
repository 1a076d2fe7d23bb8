"""Fast PPO inference (`MaskedActor`, the fused `GridFeatures`): the same actions, logits
and samples as SB3's distribution path, and the same features as the per-line formulation,
on observations of real games."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.baselines.heuristics import EVAgent
from agents.ppo.features import GridFeatures, line_mates
from agents.ppo.inference import MaskedActor, PolicyInputError
from agents.ppo.policy import PPOAgent, load_ppo_agent
from agents.training.imitation import collect_demonstrations
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationLayout
from skyjo_env.protocol import RandomAgent

MODELS = Path(__file__).resolve().parents[2] / "models"
#: games of ev self-play giving about 3000 observations
GAMES = {2: 6, 4: 4}


@pytest.fixture(scope="module", params=[2, 4], ids=["ppo_2p", "ppo_4p"])
def shipped(request):
    """``(agent, observations (N, O), masks (N, A), rules)`` of a shipped model on ev
    self-play."""
    players = request.param
    rules = SkyjoRules(num_players=players)
    observations, masks, _ = collect_demonstrations(rules, [EVAgent(rules)], GAMES[players], 1)
    return load_ppo_agent(MODELS / f"ppo_{players}p.zip", rules), observations, masks, rules


def sb3_logits(policy, observations: np.ndarray, masks: np.ndarray) -> torch.Tensor:
    """The reference: sb3-contrib's masked distribution's logits, float32 (N, A)."""
    with torch.no_grad():
        distribution = policy.get_distribution(torch.as_tensor(observations), action_masks=masks)
    return distribution.distribution.logits


def test_masked_actor__greedy_actions_equal_the_sb3_distribution_argmax(shipped):
    agent, observations, masks, _ = shipped
    assert len(observations) >= 2500
    expected = sb3_logits(agent.policy, observations, masks).argmax(dim=1).numpy()
    actions = agent.act(observations, masks)
    assert actions.dtype == np.int64
    np.testing.assert_array_equal(actions, expected)
    # one observation per call (the batch-of-one path), on a slice
    singles = [agent.act(observations[k], masks[k])[0] for k in range(100)]
    np.testing.assert_array_equal(singles, expected[:100])


def test_masked_actor__logits_equal_the_sb3_distribution_logits(shipped):
    agent, observations, masks, _ = shipped
    expected = sb3_logits(agent.policy, observations, masks)
    with torch.inference_mode():
        logits = agent.actor.masked_logits(torch.as_tensor(observations), torch.as_tensor(masks))
    assert torch.equal(logits, expected)


def test_masked_actor__samples_equal_sb3_sampling_with_the_same_seed(shipped):
    agent, observations, masks, _ = shipped
    sampler = PPOAgent(agent.policy, deterministic=False, seed=7)
    samples = sampler.act(observations, masks)
    probabilities = sb3_logits(agent.policy, observations, masks).softmax(dim=1)
    expected = torch.multinomial(probabilities, 1, generator=torch.Generator().manual_seed(7))
    np.testing.assert_array_equal(samples, expected[:, 0].numpy())
    assert masks[np.arange(len(samples)), samples].all()
    assert (samples != agent.act(observations, masks)).any()  # it does sample


def test_masked_actor__follows_the_current_weights(shipped):
    agent, observations, masks, _ = shipped
    policy = copy.deepcopy(agent.policy)
    actor = MaskedActor(policy)
    favoured = int(np.argmax(masks.sum(axis=0)))  # the action legal most often
    with torch.no_grad():
        policy.action_net.bias[favoured] += 1e4  # changed after the actor was built
    actions = actor.act(observations, masks)
    assert (actions[masks[:, favoured]] == favoured).all()


def test_masked_actor__refuses_inputs_that_do_not_fit(shipped):
    agent, observations, masks, _ = shipped
    size, actions = observations.shape[1], masks.shape[1]
    with pytest.raises(PolicyInputError, match=rf"observations of shape \(3, {size - 1}\)"):
        agent.act(observations[:3, 1:], masks[:3])
    with pytest.raises(PolicyInputError, match=rf"action masks of shape \(2, {actions}\) for 3"):
        agent.act(observations[:3], masks[:2])
    empty = masks[:3].copy()
    empty[1] = False
    with pytest.raises(PolicyInputError, match="action mask row 1 has no legal action"):
        agent.act(observations[:3], empty)


def test_masked_actor__bfloat16_logits_are_close_and_actions_agree(shipped):
    agent, observations, masks, _ = shipped
    exact = sb3_logits(agent.policy, observations, masks)
    fast = PPOAgent(agent.policy, precision="bfloat16")
    assert fast.actor.precision == "bfloat16" and agent.actor.precision == "float32"
    with torch.inference_mode():
        logits = fast.actor.masked_logits(torch.as_tensor(observations), torch.as_tensor(masks))
    assert logits.dtype == torch.float32
    # bfloat16 keeps 8 significant bits: probabilities move by a few hundredths at most
    # (measured: at most 0.032, 0.0002 on average), and they do move
    gaps = (logits.softmax(dim=1) - exact.softmax(dim=1)).abs()[torch.as_tensor(masks)]
    assert 0 < gaps.max() < 0.1 and gaps.mean() < 0.002
    actions = fast.act(observations, masks)
    assert masks[np.arange(len(actions)), actions].all()
    assert np.mean(actions == exact.argmax(dim=1).numpy()) >= 0.99


def test_masked_actor__unknown_precision_is_an_error(shipped):
    agent = shipped[0]
    with pytest.raises(ValueError, match="precision must be one of float32, bfloat16, got 'half'"):
        PPOAgent(agent.policy, precision="half")


# ------------------------------------------------------------------- fused grid features


def reference_grid_features(rules: SkyjoRules, obs: torch.Tensor) -> torch.Tensor:
    """The per-card, per-line formulation the fused `GridFeatures` replaced (kept verbatim
    in meaning: see the module docstring of agents.ppo.features)."""
    layout = ObservationLayout(rules)
    cut, scale = layout.describe(), layout.value_scale
    counts = torch.as_tensor(rules.card_counts, dtype=torch.float32)
    card_values = torch.as_tensor(rules.card_values, dtype=torch.float32)

    def piece(name):
        return obs[:, cut[name]]

    def chance_of(probs, card):
        hits = [(card == v) * probs[:, k:k + 1] for k, v in enumerate(card_values.tolist())]
        return torch.stack(hits).sum(dim=0)

    values = torch.round(piece("own_values") * scale)
    hidden, cleared = piece("own_hidden") > 0.5, piece("own_cleared") > 0.5
    face_up = ~hidden & ~cleared
    unseen = torch.round(piece("unseen_counts") * counts)
    probs = unseen / unseen.sum(dim=1, keepdim=True).clamp(min=1.0)
    mean = (probs * card_values).sum(dim=1, keepdim=True)
    expected = torch.where(face_up, values, torch.where(hidden, mean, torch.zeros_like(values)))
    has_held = piece("has_held_card") > 0.5
    lines = [(values[:, m], face_up[:, m]) for m in map(torch.as_tensor, line_mates(rules))]
    features = []
    for card, known in ((torch.round(piece("discard_top") * scale), torch.ones_like(has_held)),
                        (torch.round(piece("held_card") * scale), has_held)):
        matches, clears_any = torch.zeros_like(values), torch.zeros_like(face_up)
        removed = torch.zeros_like(values)
        for kind, (mate_values, mate_up) in enumerate(lines):
            equal = mate_up & (mate_values == card[:, :, None])
            if kind == 0:
                matches = equal.float().mean(dim=2)
            clears_any = clears_any | equal.all(dim=2)
            removed = removed + equal.all(dim=2) * (mate_values * mate_up).sum(dim=2)
        drop = expected - card + clears_any * card + removed
        usable = ~cleared & known
        features += [matches * usable, clears_any * usable, drop * usable / scale]
    chance = torch.zeros_like(values)
    for mate_values, mate_up in lines:
        same = mate_up.all(dim=2) & (mate_values == mate_values[:, :, :1]).all(dim=2)
        chance = torch.maximum(chance, same * chance_of(probs, mate_values[:, :, 0]))
    features += [chance * hidden, mean / scale]
    return torch.cat([f.float() for f in features], dim=1)


VARIANTS = {
    "official 3 players": SkyjoRules(num_players=3),
    "rows and columns": SkyjoRules(row_elimination=True),
    "rows only": SkyjoRules(column_elimination=False, row_elimination=True),
    "no eliminations": SkyjoRules(column_elimination=False, max_rounds=2),
    "deck with gaps, 2x5": SkyjoRules(rows=2, cols=5, deck={-3: 12, 0: 20, 4: 20, 9: 20}),
}


@pytest.mark.parametrize("rules", VARIANTS.values(), ids=VARIANTS.keys())
def test_grid_features__equal_the_per_line_reference_on_played_games(rules):
    observations, _, _ = collect_demonstrations(rules, [RandomAgent(3)], 4, 2)
    obs = torch.as_tensor(observations)
    fused = GridFeatures(rules)(obs)
    assert torch.equal(fused, reference_grid_features(rules, obs))
    assert fused[:, :-1].abs().sum() > 0  # the games exercised the features


def test_grid_features__equal_the_per_line_reference_on_ev_games(shipped):
    _, observations, _, rules = shipped
    obs = torch.as_tensor(observations)
    assert torch.equal(GridFeatures(rules)(obs), reference_grid_features(rules, obs))
