"""Grid features of the PPO networks: known answers on hand-built observations."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from agents.ppo.features import (
    RISK_SCALE,
    SLOT_FEATURES,
    FeedingFeatures,
    GridFeatures,
    GridFeaturesExtractor,
    RiskFeatures,
    feeding_feature_size,
    grid_feature_size,
    line_mates,
    risk_feature_size,
)
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.encoding import ObservationEncoder, ObservationLayout

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


# ------------------------------------------------------------ feeding features


def with_next_seat(obs: np.ndarray, values: dict[int, int], hidden: set[int],
                   cleared: set[int], rules: SkyjoRules = RULES, block: int = 0) -> np.ndarray:
    """``obs`` with opponent block ``block`` (0: the next seat) set to the given grid."""
    piece = ObservationLayout(rules).describe()
    start = block * rules.num_slots
    obs = obs.copy()
    for slot, value in values.items():
        obs[piece["opponent_values"].start + start + slot] = value / SCALE
    for slot in hidden:
        obs[piece["opponent_hidden"].start + start + slot] = 1.0
    for slot in cleared:
        obs[piece["opponent_cleared"].start + start + slot] = 1.0
    return obs


# the next seat: column 0 = a face-up pair of 5s over a face-down card (a 5 clears it);
# column 1 = a face-up 7 and 2 over a face-up 9 (a 7 and a 2 do not); column 2: 1s over
# a face-up 4 (a 1 placed on the 4 clears it); column 3 cleared
NEXT = dict(values={0: 5, 4: 5, 1: 7, 5: 2, 9: 9, 2: 1, 6: 1, 10: 4}, hidden={8},
            cleared={3, 7, 11})


def feeding_of(obs: np.ndarray, rules: SkyjoRules = RULES) -> tuple[np.ndarray, float, float]:
    out = FeedingFeatures(rules)(torch.as_tensor(obs[None])).numpy()[0]
    slots = rules.num_slots
    return out[:slots], float(out[slots]), float(out[slots + 1])


def test_feeding_features__cards_that_complete_the_next_seats_columns():
    obs = with_next_seat(observation(**GRID, discard=0, held=1), **NEXT)
    slot_feeds, held_feeds, chance = feeding_of(obs)
    # own face-up 5s (slots 0 and 4) feed column 0; the 7 at slot 1 does not (column 1
    # holds a 7 and a 2); the face-up 1 at slot 2 feeds column 2
    assert slot_feeds.tolist() == [1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0]
    assert held_feeds == 1.0
    # a 5 or a 1 feeds: 10 + 10 of the 150 unseen cards
    assert chance == pytest.approx(20 / 150)


def test_feeding_features__unknown_held_card_face_down_and_cleared_slots_feed_nothing():
    obs = with_next_seat(observation(own={0: 5}, hidden={1, 2}, cleared={4, 8}, discard=5), **NEXT)
    slot_feeds, held_feeds, _ = feeding_of(obs)
    assert slot_feeds.tolist() == [1] + [0] * 11
    assert held_feeds == 0.0


def test_feeding_features__only_the_next_seat_counts():
    rules = SkyjoRules(num_players=3)
    base = np.zeros(ObservationLayout(rules).size, np.float32)
    piece = ObservationLayout(rules).describe()
    base[piece["own_values"].start] = 5 / SCALE
    base[piece["unseen_counts"]] = 1.0
    after_next = with_next_seat(base, **NEXT, rules=rules, block=1)
    assert feeding_of(after_next, rules)[0][0] == 0.0
    assert feeding_of(with_next_seat(base, **NEXT, rules=rules), rules)[0][0] == 1.0


def _completing_by_hand(values, hidden, cleared, rules: SkyjoRules) -> list[set[int]]:
    """Per slot: the values that, placed there, clear one of its lines."""
    wanted = [set() for _ in range(rules.num_slots)]
    for mates in line_mates(rules):
        for slot in range(rules.num_slots):
            others = mates[slot]
            if cleared[slot] or hidden[others].any() or cleared[others].any():
                continue
            if len(set(values[others].tolist())) == 1:
                wanted[slot].add(int(values[others[0]]))
    return wanted


def _feeding_by_hand(decoded: dict, row: int, rules: SkyjoRules) -> np.ndarray:
    """The feeding and waiting features of one decoded observation, slot by slot and line
    by line."""
    slots = rules.num_slots
    counts = decoded["unseen_counts"][row]
    chance_of = dict(zip(rules.card_values.tolist(), (counts / max(counts.sum(), 1)).tolist(),
                         strict=True))
    wanted = set().union(*_completing_by_hand(
        decoded["opponent_values"][row, 0], decoded["opponent_hidden"][row, 0],
        decoded["opponent_cleared"][row, 0], rules))
    own_up = ~(decoded["own_hidden"][row] | decoded["own_cleared"][row])
    slot_feeds = [float(own_up[s] and int(decoded["own_values"][row, s]) in wanted)
                  for s in range(slots)]
    held = float(bool(decoded["has_held_card"][row]) and int(decoded["held_card"][row]) in wanted)
    chance = sum(chance_of.get(v, 0.0) for v in wanted)
    own_wanted = _completing_by_hand(decoded["own_values"][row], decoded["own_hidden"][row],
                                     decoded["own_cleared"][row], rules)
    place = [max((chance_of.get(v, 0.0) for v in values), default=0.0) for values in own_wanted]
    draw = sum(chance_of.get(v, 0.0) for v in set().union(*own_wanted))
    return np.array([*slot_feeds, held, chance, *place, draw], np.float32)


@pytest.mark.parametrize("rules", [
    SkyjoRules(),
    SkyjoRules(num_players=3),
    SkyjoRules(column_elimination=False, row_elimination=True),
    SkyjoRules(row_elimination=True),
])
def test_feeding_features__equal_the_by_hand_rule_over_played_games(rules):
    from agents.registry import make_agent
    from agents.training.imitation import collect_demonstrations

    observations, _, _ = collect_demonstrations(rules, [make_agent("ev", rules, seed=0)],
                                                games=6, seed=3)
    decoded = ObservationEncoder(rules).decode(observations)
    got = FeedingFeatures(rules, waits=True)(torch.as_tensor(observations)).numpy()
    expected = np.stack([_feeding_by_hand(decoded, row, rules) for row in range(len(got))])
    np.testing.assert_allclose(got, expected, atol=1e-6)
    slots = rules.num_slots
    np.testing.assert_array_equal(  # without waits: the first part alone
        FeedingFeatures(rules)(torch.as_tensor(observations)).numpy(), got[:, :slots + 2])
    # every rule fired in these games
    assert expected[:, :slots].sum() > 10 and expected[:, slots + 1].max() > 0
    assert (expected[:, slots + 2:2 * slots + 2] > 0).sum() > 10 and expected[:, -1].max() > 0


def test_extractor__feeding_appends_to_the_grid_features():
    size = ObservationLayout(RULES).size
    space = spaces.Box(-1, 1, (size,), np.float32)
    plain = GridFeaturesExtractor(space, RULES.to_dict())
    feeding = GridFeaturesExtractor(space, RULES.to_dict(), feeding=True)
    assert feeding.features_dim == plain.features_dim + feeding_feature_size(RULES)
    obs = torch.as_tensor(with_next_seat(observation(**GRID, discard=5), **NEXT)[None])
    out = feeding(obs)
    assert torch.equal(out[:, :plain.features_dim], plain(obs))
    assert torch.equal(out[:, plain.features_dim:], FeedingFeatures(RULES)(obs))


def test_feeding_features__waits_for_the_cards_that_clear_own_lines():
    # own column 0: a pair of 5s over a face-up 7 (a drawn 5 placed on the 7 clears it);
    # column 1: a pair of 3s over a face-down card
    obs = observation(own={0: 5, 4: 5, 8: 7, 1: 3, 5: 3}, hidden={9, 2, 6, 10},
                      cleared={3, 7, 11}, discard=0)
    out = FeedingFeatures(RULES, waits=True)(torch.as_tensor(obs[None])).numpy()[0]
    place, draw = out[14:26], out[26]
    expected = np.zeros(12)
    expected[[8, 9]] = 10 / 150
    np.testing.assert_allclose(place, expected, atol=1e-7)
    assert draw == pytest.approx(20 / 150)
    assert feeding_feature_size(RULES, waits=True) == out.size == 2 * 12 + 3


def _risk_by_hand(decoded: dict, row: int, rules: SkyjoRules) -> np.ndarray:
    """The risk features of one decoded observation, seat by seat."""
    slots, players = rules.num_slots, rules.num_players
    counts = decoded["unseen_counts"][row]
    mean = float((counts * rules.card_values).sum() / max(counts.sum(), 1))
    grids = [(decoded["own_values"][row], decoded["own_hidden"][row], decoded["own_cleared"][row])]
    grids += [(decoded["opponent_values"][row, k], decoded["opponent_hidden"][row, k],
               decoded["opponent_cleared"][row, k]) for k in range(players - 1)]
    hidden = np.array([h.sum() for _, h, _ in grids], np.float64)
    expected = np.array([v[~(h | c)].sum() + h.sum() * mean for v, h, c in grids])
    totals = decoded["total_scores"][row] / rules.target_score
    end = totals + expected / rules.target_score
    return np.array([
        *(hidden / slots), *(expected / RISK_SCALE),
        (expected[0] - expected[1:].min()) / RISK_SCALE,
        hidden[1:].min() / slots, (hidden[1:] <= 1).mean(),
        totals[0] - totals[1:].min(), end[0] - end[1:].min(), end.max(),
    ], np.float32)


@pytest.mark.parametrize("rules", [SkyjoRules(), SkyjoRules(num_players=4),
                                   SkyjoRules(num_players=3, row_elimination=True)])
def test_risk_features__equal_the_by_hand_rule_over_played_games(rules):
    from agents.registry import make_agent
    from agents.training.imitation import collect_demonstrations

    observations, _, _ = collect_demonstrations(rules, [make_agent("ev", rules, seed=0)],
                                                games=4, seed=5)
    decoded = ObservationEncoder(rules).decode(observations)
    got = RiskFeatures(rules)(torch.as_tensor(observations)).numpy()
    expected = np.stack([_risk_by_hand(decoded, row, rules) for row in range(len(got))])
    assert got.shape == (len(observations), risk_feature_size(rules))
    np.testing.assert_allclose(got, expected, atol=1e-5)
    players = rules.num_players
    # the games reached every case: totals, seats one card from going out, either sign
    assert expected[:, 2 * players + 3].max() > 0 and expected[:, 2 * players + 2].max() > 0
    assert (expected[:, 2 * players] > 0).any() and (expected[:, 2 * players] < 0).any()


def test_risk_features__known_answer_for_four_seats():
    rules = SkyjoRules(num_players=4)
    layout = ObservationLayout(rules)
    piece = layout.describe()
    obs = np.zeros(layout.size, np.float32)
    obs[piece["unseen_counts"]] = 1.0  # every card unseen: the deck mean
    # own: 11 face-up 1s, one face-down card; opponents: all face down, then one with
    # three face-up 0s and the rest face down, then one with one face-down card left
    obs[piece["own_values"].start:piece["own_values"].start + 11] = 1 / SCALE
    obs[piece["own_hidden"].start + 11] = 1.0
    hidden = piece["opponent_hidden"].start
    obs[hidden:hidden + 12] = 1.0
    obs[hidden + 15:hidden + 24] = 1.0
    obs[hidden + 24 + 11] = 1.0
    values = piece["opponent_values"].start
    obs[values + 24:values + 35] = 2 / SCALE
    obs[piece["total_scores"]] = np.array([10, 40, 20, 95], np.float32) / 100
    out = RiskFeatures(rules)(torch.as_tensor(obs[None])).numpy()[0]
    expected = np.array([11 + DECK_MEAN, 12 * DECK_MEAN, 9 * DECK_MEAN, 22 + DECK_MEAN])
    np.testing.assert_allclose(out[:4], np.array([1, 12, 9, 1]) / 12, atol=1e-6)
    np.testing.assert_allclose(out[4:8], expected / RISK_SCALE, atol=1e-5)
    assert out[8] == pytest.approx((11 - 22) / RISK_SCALE, abs=1e-5)  # the last seat's 11 2s
    assert out[9] == pytest.approx(1 / 12) and out[10] == pytest.approx(1 / 3)
    assert out[11] == pytest.approx(10 / 100 - 20 / 100)
    end = (np.array([10, 40, 20, 95]) + expected) / 100
    assert out[12] == pytest.approx(end[0] - end[1:].min(), abs=1e-6)
    assert out[13] == pytest.approx(end.max(), abs=1e-6)


def test_extractor__risk_appends_to_the_waiting_features():
    rules = SkyjoRules(num_players=4)
    size = ObservationLayout(rules).size
    space = spaces.Box(-1, 1, (size,), np.float32)
    waits = GridFeaturesExtractor(space, rules.to_dict(), feeding=True, waits=True)
    risk = GridFeaturesExtractor(space, rules.to_dict(), feeding=True, waits=True, risk=True)
    assert risk.features_dim == waits.features_dim + risk_feature_size(rules)
    obs = torch.rand(5, size)
    out = risk(obs)
    assert torch.equal(out[:, :waits.features_dim], waits(obs))
    assert torch.equal(out[:, waits.features_dim:], RiskFeatures(rules)(obs))
    with pytest.raises(ValueError, match="risk features extend grid_feeding_waits"):
        GridFeaturesExtractor(space, rules.to_dict(), feeding=True, risk=True)
