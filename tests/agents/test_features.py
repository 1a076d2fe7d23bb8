"""Grid features of the PPO networks: known answers on hand-built observations."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from agents.ppo.features import (
    SLOT_FEATURES,
    GridFeatures,
    GridFeaturesExtractor,
    grid_feature_size,
    line_mates,
)
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationLayout

RULES = SkyjoRules()  # 3 x 4 grid, slot = row * 4 + column; columns clear
SCALE = 12.0
#: mean of the official deck: (-2*5 - 1*10 + 78*10) / 150
DECK_MEAN = 760 / 150


def observation(own: dict[int, int], hidden: set[int], cleared: set[int], discard: int,
                held: int | None = None) -> np.ndarray:
    """One observation with the given own grid and cards; every card value unseen."""
    layout = ObservationLayout(RULES)
    piece = layout.describe()
    obs = np.zeros(layout.size, np.float32)
    for slot, value in own.items():
        obs[piece["own_values"].start + slot] = value / SCALE
    for slot in hidden:
        obs[piece["own_hidden"].start + slot] = 1.0
    for slot in cleared:
        obs[piece["own_cleared"].start + slot] = 1.0
    obs[piece["discard_top"].start] = discard / SCALE
    if held is not None:
        obs[piece["held_card"].start] = held / SCALE
        obs[piece["has_held_card"].start] = 1.0
    obs[piece["unseen_counts"]] = 1.0
    return obs


def features_of(obs: np.ndarray) -> dict[str, np.ndarray]:
    out = GridFeatures(RULES)(torch.as_tensor(obs[None])).numpy()[0]
    slots = RULES.num_slots
    named = {name: out[k * slots:(k + 1) * slots] for k, name in enumerate(SLOT_FEATURES)}
    named["unseen_mean"] = out[-1:]
    return named


# column 0 = slots 0, 4, 8: a face-up pair of 5s over a face-down card;
# column 1 = slots 1, 5, 9: a face-up 7 over two face-down cards; column 3 cleared
GRID = dict(own={0: 5, 4: 5, 1: 7, 2: 1, 6: 2, 10: 3}, hidden={8, 5, 9},
            cleared={3, 7, 11})


def test_line_mates__columns_of_the_official_grid():
    (columns,) = line_mates(RULES)
    assert columns[5].tolist() == [1, 9]
    assert columns[0].tolist() == [4, 8]


def test_line_mates__rows_when_the_variant_clears_rows():
    kinds = line_mates(RULES.replace(column_elimination=False, row_elimination=True))
    assert len(kinds) == 1 and kinds[0][5].tolist() == [4, 6, 7]


def test_grid_features__discard_that_completes_a_column():
    named = features_of(observation(**GRID, discard=5))
    assert named["discard_matches"][8] == 1.0
    assert named["discard_clears"][8] == 1.0
    # the face-down card (worth the deck mean) goes, and so do both 5s
    assert named["discard_drop"][8] == pytest.approx((DECK_MEAN + 10) / SCALE, abs=1e-5)
    assert named["discard_matches"][0] == 0.5 and named["discard_clears"][0] == 0.0
    assert named["discard_drop"][0] == 0.0
    assert named["discard_drop"][1] == pytest.approx(2 / SCALE)
    assert named["discard_matches"][1] == 0.0


def test_grid_features__cleared_slots_and_unknown_held_card_are_zero():
    named = features_of(observation(**GRID, discard=5))
    for name in SLOT_FEATURES:
        assert not named[name][[3, 7, 11]].any(), name
    for name in ("held_matches", "held_clears", "held_drop"):
        assert not named[name].any(), name


def test_grid_features__held_card_and_reveal_chance_and_mean():
    named = features_of(observation(**GRID, discard=0, held=7))
    assert named["held_matches"][5] == 0.5 and named["held_clears"][5] == 0.0
    assert named["held_drop"][1] == 0.0
    # slot 8 would clear its column if it shows a 5: 10 of the 150 unseen cards
    assert named["reveal_clear_chance"][8] == pytest.approx(10 / 150)
    assert named["reveal_clear_chance"][5] == 0.0
    assert named["unseen_mean"][0] == pytest.approx(DECK_MEAN / SCALE)


def test_extractor__appends_the_features_to_the_observation():
    size = ObservationLayout(RULES).size
    extractor = GridFeaturesExtractor(spaces.Box(-1, 1, (size,), np.float32), RULES.to_dict())
    assert extractor.features_dim == size + grid_feature_size(RULES) == size + 7 * 12 + 1
    obs = torch.as_tensor(observation(**GRID, discard=5)[None])
    out = extractor(obs)
    assert torch.equal(out[:, :size], obs)
    assert not list(extractor.parameters())


def test_extractor__observation_size_of_other_rules_is_an_error():
    with pytest.raises(ValueError, match="observation space has 5 features"):
        GridFeaturesExtractor(spaces.Box(-1, 1, (5,), np.float32), RULES.to_dict())
