"""The peeking ev (`EVAgent.act_with_peek`) and the luck-ceiling benchmark's play loop."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from agents.baselines.ev import EVAgent, PeekValuesError
from skyjo_env.core import SkyjoRules, layout, legal_action_mask, new_batch, reset, step
from skyjo_env.encoding import ObservationEncoder

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


@pytest.fixture(scope="module")
def ceilings(request):
    """``experiments/ceilings.py`` as a module (experiments are scripts, not a package)."""
    patch = pytest.MonkeyPatch()
    patch.syspath_prepend(str(EXPERIMENTS))  # it imports _benchmarks from beside itself
    request.addfinalizer(patch.undo)
    spec = importlib.util.spec_from_file_location("ceilings", EXPERIMENTS / "ceilings.py")
    module = importlib.util.module_from_spec(spec)
    patch.setitem(sys.modules, "ceilings", module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _decisions(rules: SkyjoRules, games: int, seed: int):
    """Every decision of ``games`` ev self-play games: (observations, masks, own true grids,
    own face-down slot counts)."""
    agent = EVAgent(rules)
    encoder = ObservationEncoder(rules)
    state = new_batch(rules, games)
    reset(state, np.random.default_rng(seed))
    kept = []
    while not state.all_over:
        rows = np.flatnonzero(~state.game_over)
        seat = state.current_player[rows]
        masks = legal_action_mask(state)[rows]
        observations = encoder.encode(state, state.current_player)[rows]
        grids = state.grid[rows, seat]
        face_down = (state.slot_state[rows, seat] == layout.HIDDEN).sum(axis=1)
        kept.append((observations, masks, grids, face_down))
        actions = np.full(games, -1, np.int64)
        actions[rows] = agent.act(observations, masks)
        step(state, actions)
    return tuple(np.concatenate(part) for part in zip(*kept, strict=True))


@pytest.fixture(scope="module")
def decisions():
    return _decisions(SkyjoRules(), games=12, seed=3)


def test_act_with_peek__equals_ev_without_own_face_down_cards(decisions):
    observations, masks, grids, face_down = decisions
    rules = SkyjoRules()
    agent = EVAgent(rules)
    # a seat acting with no face-down card is rare (going out ends its round), so show
    # every recorded decision with the own grid turned face up
    pieces = ObservationEncoder(rules).describe()
    shown = observations.copy()
    cleared = shown[:, pieces["own_cleared"]] > 0.5
    shown[:, pieces["own_values"]] = np.where(cleared, 0.0, grids / agent.scale)
    shown[:, pieces["own_hidden"]] = 0.0
    np.testing.assert_array_equal(agent.act_with_peek(shown, masks, grids),
                                  agent.act(shown, masks))
    # while with face-down cards the peek changes decisions
    plain = agent.act(observations, masks)
    peeked = agent.act_with_peek(observations, masks, grids)
    assert (face_down > 0).all() and (peeked != plain).mean() > 0.02


def test_act_with_peek__legal_and_deterministic(decisions):
    observations, masks, grids, _ = decisions
    first = EVAgent(SkyjoRules()).act_with_peek(observations, masks, grids)
    second = EVAgent(SkyjoRules()).act_with_peek(observations, masks, grids)
    assert masks[np.arange(first.size), first].all()
    np.testing.assert_array_equal(first, second)


def _stacked_place_discard():
    """A state where seat 0 has taken a discarded 5 and must place it; its face-down slot 6
    holds a 12 and its other face-down cards are low. Returns (state, seat 0's grid)."""
    rules = SkyjoRules()
    seat0 = [3, 3, -2, 0, 0, -1, 12, 1, 2, -2, 0, 1]
    seat1 = [0, 0, 4, 4, 6, 6, 7, 7, 8, 8, 9, 9]
    rest = list(rules.deck_array())
    for value in [*seat0, *seat1, 5]:
        rest.remove(value)
    state = new_batch(rules, 1)
    reset(state, [0], stacked_deck=[*seat0, *seat1, 5, *rest])
    for slot in (0, 0, 1, 1):  # initial reveals alternate from seat 0: slots 0 and 1 each
        step(state, [slot])
    assert state.current_player[0] == 0  # seat 0 shows 3 + 3 > 0 + 0, so it starts
    step(state, [rules.num_slots + 1])  # TAKE_DISCARD: the 5
    return state, state.grid[0, 0].copy()


def test_act_with_peek__places_on_a_known_twelve():
    state, grid = _stacked_place_discard()
    rules = state.rules
    observation = ObservationEncoder(rules).encode(state, state.current_player)
    mask = legal_action_mask(state)
    agent = EVAgent(rules)
    place_on_twelve = rules.num_slots + 2 + 6
    assert agent.act_with_peek(observation, mask, grid[None])[0] == place_on_twelve
    # plain ev sees all face-down slots as alike and takes the first one
    assert agent.act(observation, mask)[0] == rules.num_slots + 2 + 2


def test_act_with_peek__rejects_values_that_do_not_fit_the_observation():
    state, grid = _stacked_place_discard()
    rules = state.rules
    observation = ObservationEncoder(rules).encode(state, state.current_player)
    mask = legal_action_mask(state)
    agent = EVAgent(rules)
    with pytest.raises(PeekValuesError, match=r"shape \(2, 12\); expected \(1, 12\)"):
        agent.act_with_peek(observation, mask, np.zeros((2, 12)))
    bad_card = grid[None].astype(float)
    bad_card[0, 6] = 13
    with pytest.raises(PeekValuesError, match=r"own_true_values\[0, 6\] = 13 is not a card"):
        agent.act_with_peek(observation, mask, bad_card)
    other_grid = grid[None].copy()
    other_grid[0, 0] = 4  # slot 0 is face up showing 3
    with pytest.raises(PeekValuesError, match=r"\[0, 0\] = 4 but the observation shows 3"):
        agent.act_with_peek(observation, mask, other_grid)


def test_play_peek_match__full_games_seat_rotation_and_determinism(ceilings):
    rules = SkyjoRules(num_players=2)
    totals, truncated = ceilings.play_peek_match(rules, 6, seed=5)
    again, _ = ceilings.play_peek_match(rules, 6, seed=5)
    assert totals.shape == (6, 2) and not truncated.any()
    np.testing.assert_array_equal(totals, again)
    assert (totals.max(axis=1) >= rules.target_score).all()  # played to the target
    control, _ = ceilings.play_peek_match(rules, 6, seed=5, peek=False)
    # the two rotations of a deal with identical agents mirror each other exactly
    np.testing.assert_array_equal(control[0::2], control[1::2, ::-1])


def test_play_peek_match__four_players_vs_three_ev(ceilings):
    rules = SkyjoRules(num_players=4)
    totals, truncated = ceilings.play_peek_match(rules, 4, seed=1)
    assert totals.shape == (4, 4) and not truncated.any()
    assert (totals.max(axis=1) >= rules.target_score).all()  # played to the target
    # without the peek, agent 0 is a fourth ev: the four rotations of the deal are then
    # one game seen from rotated seats, so agents 1-3 are plain ev too
    control, _ = ceilings.play_peek_match(rules, 4, seed=1, peek=False)
    for rotation in range(1, 4):
        np.testing.assert_array_equal(control[rotation], np.roll(control[0], -rotation))
    assert not np.array_equal(totals, control)  # the peek changed agent 0's play
    ceiling = ceilings.summarize("x", totals, truncated, seconds=0.0)
    assert ceiling.games == 4 and 0.0 <= ceiling.low <= ceiling.win_rate <= ceiling.high <= 1.0


def test_play_peek_match__control_with_greedy_equals_the_tournament_games(ceilings):
    from agents.evaluation.games import play_games
    from agents.registry import make_agent

    rules = SkyjoRules(num_players=3)
    totals, truncated = ceilings.play_peek_match(rules, 6, seed=4, peek=False,
                                                 opponent="greedy")
    specs = ["ev", "greedy", "greedy"]
    records, _ = play_games([make_agent(s, rules, 4) for s in specs], rules, 6, 4, specs=specs)
    # the same deals, rotations and agents as evaluate.py --agents ev greedy greedy
    np.testing.assert_array_equal(totals, records.total)
    np.testing.assert_array_equal(truncated, records.truncated)
    peeked, _ = ceilings.play_peek_match(rules, 6, seed=4, opponent="greedy")
    assert not np.array_equal(peeked, totals)  # the peek changed agent 0's play
