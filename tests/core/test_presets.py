"""The comparison presets of configs/rules/: each loads by name, sets exactly what its
header says, and plays full games."""

from __future__ import annotations

import numpy as np
import pytest

from skyjo_env.core.engine import legal_action_mask, new_batch, reset, step
from skyjo_env.core.rules import PRESETS_DIR, SkyjoRules, available_presets, load_rules

#: preset -> the fields it changes from the official rules
COMPARISON_PRESETS = {
    "single_round": {"max_rounds": 1},
    "no_finisher_penalty": {"finisher_penalty_mode": "none"},
    "finisher_penalty_other_lt": {"finisher_penalty_condition": "other_lt"},
}


def _play_random_games(rules: SkyjoRules, games: int, seed: int):
    """Full games of uniformly random legal moves (the same moves for the same seed while
    the games' states agree); returns the finished state."""
    state = new_batch(rules, games)
    reset(state, np.random.default_rng(seed))
    policy = np.random.default_rng(seed + 1)
    for _ in range(100_000):
        if state.all_over:
            return state
        mask = legal_action_mask(state)
        actions = np.argmax(policy.random(mask.shape) * mask, axis=1)
        actions[state.game_over] = -1
        step(state, actions)
    raise AssertionError("random games did not end")


@pytest.mark.parametrize("name", sorted(COMPARISON_PRESETS))
def test_comparison_presets__load_by_name_and_set_only_their_fields(name):
    assert name in available_presets()
    assert load_rules(name) == SkyjoRules(**COMPARISON_PRESETS[name])
    header = (PRESETS_DIR / f"{name}.yaml").read_text().splitlines()[0]
    assert header.startswith("# "), "each preset opens with a comment saying what it is for"


@pytest.mark.parametrize("name", sorted(COMPARISON_PRESETS))
def test_comparison_presets__play_full_games(name):
    state = _play_random_games(load_rules(name, num_players=3), games=16, seed=3)
    assert state.game_over.all() and not state.truncated.any()
    if name == "single_round":
        np.testing.assert_array_equal(state.rounds_played, 1)


@pytest.mark.parametrize("name", ["no_finisher_penalty", "finisher_penalty_other_lt"])
def test_finisher_presets__lower_finisher_scores_than_official_on_the_same_round(name):
    # one round each, same deals and moves: only the finisher's penalty can differ
    official = _play_random_games(load_rules("official", max_rounds=1), games=256, seed=7)
    variant = _play_random_games(load_rules(name, max_rounds=1), games=256, seed=7)
    assert (variant.total_scores <= official.total_scores).all()
    assert (variant.total_scores < official.total_scores).any()
