"""The luck of search rollouts (`agents.search.luck`): known answers for each kind, zero
mean over many sampled rollouts (the property that keeps adjusted values unbiased), and
a fit that takes out exactly the luck it explains."""

from __future__ import annotations

import numpy as np
import pytest

from agents.registry import make_agent
from agents.search.agent import _concatenate, _take
from agents.search.luck import FEATURES, before_step, luck_adjusted, step_luck
from skyjo_env.core import (
    SkyjoRules,
    layout,
    legal_action_mask,
    new_batch,
    reset,
    sample_information_set,
    step,
    unseen_counts,
)
from skyjo_env.core.actions import Phase
from skyjo_env.encoding import ObservationEncoder

OWN_REVEAL, OTHERS_REVEAL, OWN_DRAW, OTHERS_DRAW, OWN_SWAP, OTHERS_SWAP = range(len(FEATURES))


def _after_setup(rules: SkyjoRules, seed: int):
    """One game past the initial reveals (seat 0 or 1 to choose a source)."""
    state = new_batch(rules, 1)
    reset(state, np.random.default_rng(seed))
    while state.phase[0] == Phase.INITIAL_REVEAL:
        step(state, np.array([int(np.flatnonzero(legal_action_mask(state)[0])[0])]))
    return state


def _mean_unseen(state) -> float:
    counts = unseen_counts(state, state.current_player.astype(np.int64))[0].astype(float)
    return float(counts @ state.rules.card_values / counts.sum())


def _stepped(state, action: int) -> np.ndarray:
    before = before_step(state)
    actions = np.array([action], np.int64)
    return step_luck(before, state, actions, step(state, actions))[0]


def test_step_luck__draw_then_discard_then_reveal_are_the_excess_over_the_unseen_mean():
    rules = SkyjoRules()
    slots = rules.num_slots
    state = _after_setup(rules, 3)
    actor = int(state.current_player[0])
    own = actor == 0
    top = int(state.draw_pile[0, state.game[0, layout.DRAW_SIZE] - 1])
    mean = _mean_unseen(state)
    luck = _stepped(state, slots)  # draw
    assert luck[OWN_DRAW if own else OTHERS_DRAW] == pytest.approx(top - mean)
    assert np.count_nonzero(luck) == 1
    assert not _stepped(state, 2 * slots + 2).any()  # discarding the drawn card: no new luck
    hidden = int(np.flatnonzero(state.slot_state[0, actor] == layout.HIDDEN)[0])
    card, mean = int(state.grid[0, actor, hidden]), _mean_unseen(state)
    luck = _stepped(state, hidden)  # the reveal after discarding
    assert luck[OWN_REVEAL if own else OTHERS_REVEAL] == pytest.approx(card - mean)
    assert np.count_nonzero(luck) == 1


def test_step_luck__a_swap_counts_the_card_swapped_out_not_the_card_placed():
    rules = SkyjoRules()
    slots = rules.num_slots
    state = _after_setup(rules, 4)
    actor = int(state.current_player[0])
    _stepped(state, slots + 1)  # take the discard: public, no luck
    hidden = int(np.flatnonzero(state.slot_state[0, actor] == layout.HIDDEN)[0])
    card, mean = int(state.grid[0, actor, hidden]), _mean_unseen(state)
    luck = _stepped(state, slots + 2 + hidden)
    assert luck[OWN_SWAP if actor == 0 else OTHERS_SWAP] == pytest.approx(card - mean)
    assert np.count_nonzero(luck) == 1


def test_rollout_luck__has_zero_mean_over_independent_sampled_rollouts():
    """One rollout per sampled deal, from positions of real games: each feature's mean is
    within 4 standard errors of 0. Counting the placed card as luck, or measuring against
    the wrong mean, moves a mean by many standard errors."""
    rules = SkyjoRules()
    agent = make_agent("search(samples=1,depth=16,luck=adjusted):ev", rules, 0)
    ev, encoder = make_agent("ev", rules, 1), ObservationEncoder(rules)
    state = new_batch(rules, 64)
    reset(state, np.random.default_rng(5))
    rng = np.random.default_rng(6)
    games, first = [], []
    for turn in range(120):
        masks = legal_action_mask(state)
        observations = encoder.encode(state, state.current_player)
        running = np.flatnonzero(~state.game_over)
        if turn >= 8 and turn % 2 == 0:  # past the setup, every few decisions
            for b in running:
                if state.current_player[b] == 0:
                    sample = sample_information_set(state, int(b), 0, 1, rng)
                    games.append(sample)
                    first.append(int(rng.choice(np.flatnonzero(masks[b]))))
        actions = np.full(state.batch_size, -1, np.int64)
        actions[running] = ev.act(observations[running], masks[running])
        step(state, actions)
    batch = _concatenate(games)
    _, luck = agent._rollout(_take(batch, np.arange(batch.batch_size)), np.array(first))
    assert luck.shape == (len(first), len(FEATURES)) and len(first) > 1000
    means = luck.mean(axis=0)
    errors = luck.std(axis=0, ddof=1) / np.sqrt(len(first))
    assert (np.abs(means) < 4 * errors).all(), dict(zip(FEATURES, means / errors, strict=True))
    assert (luck.std(axis=0) > 0.5).all()  # every kind of luck occurs


def test_luck_adjusted__takes_out_the_luck_and_keeps_each_group_mean():
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(10), 30)
    luck = rng.normal(size=(300, len(FEATURES)))
    luck -= luck.mean(axis=0)
    worth = rng.normal(size=10)[groups]
    values = worth + luck @ np.array([2.0, -1.0, 0.5, 0.0, 0.0, 3.0])
    adjusted = luck_adjusted(values, luck, groups)
    np.testing.assert_allclose(adjusted, worth, atol=1e-9)
    few = slice(0, 60)  # 60 rollouts for 6 features: too few to fit, left alone
    np.testing.assert_array_equal(luck_adjusted(values[few], luck[few], groups[few]),
                                  values[few])


def test_search__luck_adjusted_search_is_legal_and_seeded():
    rules = SkyjoRules()
    state = _after_setup(rules, 7)
    encoder = ObservationEncoder(rules)
    observations = encoder.encode(state, state.current_player)
    masks = legal_action_mask(state)
    spec = "search(samples=8,depth=6,luck=adjusted):ev"
    first = make_agent(spec, rules, 3).act(observations, masks)
    assert masks[0, first[0]]
    np.testing.assert_array_equal(first, make_agent(spec, rules, 3).act(observations, masks))


@pytest.mark.slow  # subprocess benchmark run
def test_search_luck_benchmark__runs_and_reports_the_ratios():
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "experiments" / "search_luck.py"
    done = subprocess.run(
        [sys.executable, str(script), "--decisions", "12", "--spec",
         "search(samples=24,depth=6,top_actions=3,leaf=critic,confidence_z=2,verify_samples=0):"
         "ppo:models/ppo_2p.zip"],
        capture_output=True, text=True, timeout=300, check=True,
    )
    assert "standard error adjusted / raw:" in done.stdout
    assert "  all " in done.stdout and "variance ratio" in done.stdout
