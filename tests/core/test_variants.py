"""Every variant field of RULES.md §1 has a visible effect on play."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from skyjo_env.core import layout
from skyjo_env.core.actions import Phase
from skyjo_env.core.engine import legal_action_mask, new_batch, reset, step
from skyjo_env.core.rules import MAX_ROUNDS, SkyjoRules

from .test_vectors import (
    SUM_10,
    SUM_30,
    assert_conserved,
    build_state,
    card_multiset,
    end_round_by_reveal,
    play,
    reveal,
)


def random_actions(state, policy: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per running game, -1 for finished ones."""
    mask = legal_action_mask(state)
    actions = np.argmax(policy.random(mask.shape) * mask, axis=1)
    actions[state.game_over] = -1
    return actions


def play_out(state, policy: np.random.Generator, on_step=None, max_steps: int = 50_000):
    """Play random legal actions until every game is over; ``on_step(before, events)``."""
    for _ in range(max_steps):
        if state.all_over:
            return
        before = state.copy() if on_step is not None else None
        events = step(state, random_actions(state, policy))
        if on_step is not None:
            on_step(before, events)
    raise AssertionError(f"games still running after {max_steps} steps")


def new_games(rules, games, seed):
    state = new_batch(rules, games)
    reset(state, np.random.default_rng(seed))
    return state


def assert_all_conserved(state):
    deck = Counter(state.deck.tolist())
    for b in range(state.batch_size):
        assert card_multiset(state, b) == deck


# ---------------------------------------------------------------- rows, cols


@pytest.mark.parametrize(("rows", "cols"), [(1, 2), (2, 3), (1, 5), (4, 4), (2, 8)])
def test_grid_shape__arrays_and_action_space_follow_rows_and_cols(rows, cols):
    rules = SkyjoRules(rows=rows, cols=cols, initial_reveals=1, row_elimination=True)
    slots = rows * cols
    state = new_games(rules, 6, seed=rows * 10 + cols)
    assert state.grid.shape == (6, 2, slots)
    assert state.slot_state.shape == (6, 2, slots)
    assert state.num_actions == 2 * slots + 3
    assert legal_action_mask(state).shape == (6, 2 * slots + 3)
    assert state.draw_pile_of(0).size == 150 - 2 * slots - 1
    play_out(state, np.random.default_rng(1), lambda _, __: assert_all_conserved(state))
    assert not state.truncated.any()
    assert (state.total_scores.max(axis=1) >= 100).all()


def test_column_elimination__two_card_columns_are_lines():
    rules = SkyjoRules(rows=2, cols=3)
    state = build_state(
        rules, ["5 1 2 / h5 3 h4", "1 2 3 / 4 5 h6"], [8], phase=Phase.REVEAL_AFTER_DISCARD
    )
    play(state, reveal(rules, 3))
    up, down, cleared = layout.FACE_UP, layout.HIDDEN, layout.CLEARED
    assert state.slot_state[0, 0].tolist() == [cleared, up, up, cleared, up, down]
    assert state.discard_pile_of(0).tolist() == [8, 5, 5]


@pytest.mark.parametrize("row_elimination", [False, True])
def test_column_elimination__a_single_row_grid_has_no_columns(row_elimination):
    rules = SkyjoRules(rows=1, cols=3, initial_reveals=1, row_elimination=row_elimination)
    state = build_state(rules, ["2 2 h2", "1 3 h5"], [8], phase=Phase.REVEAL_AFTER_DISCARD)
    play(state, reveal(rules, 2))
    expected = layout.CLEARED if row_elimination else layout.FACE_UP
    assert state.slot_state[0, 0].tolist() == [expected] * 3
    assert state.discard_pile_of(0).tolist() == ([8, 2, 2, 2] if row_elimination else [8])
    assert state.game[0, layout.FINISHER] == 0


@pytest.mark.parametrize("column_elimination", [True, False])
def test_column_elimination__can_be_switched_off(column_elimination):
    rules = SkyjoRules(column_elimination=column_elimination)
    grids = ["1 2 3 4 / 2 1 3 5 / 4 5 h3 h6", SUM_30]
    state = build_state(rules, grids, [8], phase=Phase.REVEAL_AFTER_DISCARD)
    play(state, reveal(rules, 10))
    column = state.slot_state[0, 0, [2, 6, 10]].tolist()
    if column_elimination:
        assert column == [layout.CLEARED] * 3
        assert state.discard_pile_of(0).tolist() == [8, 3, 3, 3]
    else:
        assert column == [layout.FACE_UP] * 3
        assert state.discard_pile_of(0).tolist() == [8]


@pytest.mark.parametrize("row_elimination", [False, True])
def test_row_elimination__a_full_equal_row_goes_only_when_enabled(row_elimination):
    rules = SkyjoRules(row_elimination=row_elimination)
    grids = ["h4 4 4 4 / 1 2 3 5 / 2 3 5 h6", SUM_30]
    state = build_state(rules, grids, [8], phase=Phase.REVEAL_AFTER_DISCARD)
    play(state, reveal(rules, 0))
    row = state.slot_state[0, 0, :4].tolist()
    if row_elimination:
        assert row == [layout.CLEARED] * 4
        assert state.discard_pile_of(0).tolist() == [8, 4, 4, 4, 4]
    else:
        assert row == [layout.FACE_UP] * 4
        assert state.discard_pile_of(0).tolist() == [8]
    assert (state.slot_state[0, 0, 4:] != layout.CLEARED).all()


def test_row_elimination__off_leaves_the_row_of_vector_15():
    rules = SkyjoRules(row_elimination=False)
    grids = ["h1 1 1 1 / 1 2 6 9 / 1 3 7 10", SUM_30]
    state = build_state(rules, grids, [8], phase=Phase.REVEAL_AFTER_DISCARD)
    play(state, reveal(rules, 0))
    assert np.flatnonzero(state.slot_state[0, 0] == layout.CLEARED).tolist() == [0, 4, 8]
    assert state.discard_pile_of(0).tolist() == [8, 1, 1, 1]


# ---------------------------------------------------------------- initial reveals


def test_initial_reveals__zero_starts_turns_at_once_with_a_seeded_random_starter():
    rules = SkyjoRules(num_players=3, initial_reveals=0)
    state = new_batch(rules, 40)
    reset(state, list(range(40)))
    assert (state.game[:, layout.PHASE] == Phase.CHOOSE_SOURCE).all()
    assert (state.slot_state == layout.HIDDEN).all()
    starters = state.game[:, layout.STARTER].copy()
    assert (state.game[:, layout.CURRENT] == starters).all()
    assert set(starters.tolist()) == {0, 1, 2}
    again = new_batch(rules, 40)
    reset(again, list(range(40)))
    np.testing.assert_array_equal(again.game[:, layout.STARTER], starters)


def test_initial_reveals__choice_mode_takes_one_decision_per_card_in_seat_order():
    rules = SkyjoRules(num_players=3, initial_reveals=3)
    state = new_games(rules, 1, seed=3)
    policy = np.random.default_rng(0)
    revealers = []
    while state.game[0, layout.PHASE] == Phase.INITIAL_REVEAL:
        seat = int(state.game[0, layout.CURRENT])
        revealers.append(seat)
        mask = legal_action_mask(state)[0]
        hidden = state.slot_state[0, seat] == layout.HIDDEN
        assert mask[: rules.num_slots].tolist() == hidden.tolist()
        assert not mask[rules.num_slots :].any()
        play(state, int(policy.choice(np.flatnonzero(mask))))
    assert revealers == [0, 1, 2] * 3
    assert (state.slot_state[0] == layout.FACE_UP).sum(axis=1).tolist() == [3, 3, 3]
    assert state.game[0, layout.REVEALS_DONE] == 9
    assert state.game[0, layout.PHASE] == Phase.CHOOSE_SOURCE


def test_initial_reveal_mode__random_reveals_seeded_slots_without_decisions():
    rules = SkyjoRules(num_players=3, initial_reveal_mode="random", initial_reveals=4)
    seeds = list(range(30))
    state = new_batch(rules, 30)
    reset(state, seeds)
    assert (state.game[:, layout.PHASE] == Phase.CHOOSE_SOURCE).all()
    shown = (state.slot_state != layout.HIDDEN).sum(axis=2)
    assert (shown == 4).all()
    patterns = {tuple(state.slot_state[b].ravel()) for b in range(30)}
    assert len(patterns) == 30
    again = new_batch(rules, 30)
    reset(again, seeds)
    np.testing.assert_array_equal(again.slot_state, state.slot_state)
    np.testing.assert_array_equal(again.game[:, layout.STARTER], state.game[:, layout.STARTER])


@pytest.mark.parametrize("mode", ["random", "choice"])
def test_initial_reveals__eliminations_are_checked_at_the_end_of_setup(mode):
    # every card is a 5 and 3 of the 4 slots of a 2x2 grid go face up: one column matches
    rules = SkyjoRules(rows=2, cols=2, initial_reveals=3, initial_reveal_mode=mode, deck={5: 20})
    state = new_games(rules, 4, seed=5)
    policy = np.random.default_rng(0)
    while (state.game[:, layout.PHASE] == Phase.INITIAL_REVEAL).any():
        step(state, random_actions(state, policy))
    states = np.sort(state.slot_state, axis=2)
    assert (states == [layout.HIDDEN, layout.FACE_UP, layout.CLEARED, layout.CLEARED]).all()
    assert (state.game[:, layout.DISCARD_SIZE] == 1 + 2 * 2).all()
    assert_all_conserved(state)


# ---------------------------------------------------------------- starters of later rounds


def round_two_state(rules, prev_finisher):
    """Round 2 about to start its initial reveals; seat 1 will show more than seat 0."""
    grids = [
        "h1 h1 h2 h3 / h4 h5 h6 h7 / h8 h9 h10 h11",
        "h9 h9 h2 h3 / h4 h5 h6 h7 / h8 h9 h10 h11",
    ]
    state = build_state(rules, grids, [8], phase=Phase.INITIAL_REVEAL, current=0)
    state.game[0, layout.REVEALS_DONE] = 0
    state.game[0, layout.ROUND] = 1
    state.game[0, layout.PREV_FINISHER] = prev_finisher
    state.game[0, layout.TURN] = 0
    play(state, reveal(rules, 0), reveal(rules, 0), reveal(rules, 1), reveal(rules, 1))
    assert state.game[0, layout.PHASE] == Phase.CHOOSE_SOURCE
    return state


@pytest.mark.parametrize(
    ("next_round_starter", "prev_finisher", "expected"),
    [
        ("previous_finisher", 0, 0),
        ("previous_finisher", -1, 1),  # no previous finisher: the round-1 rule
        ("highest_reveal_sum", 0, 1),
    ],
)
def test_next_round_starter__picks_the_seat_to_open_a_later_round(
    next_round_starter, prev_finisher, expected
):
    rules = SkyjoRules(next_round_starter=next_round_starter)
    state = round_two_state(rules, prev_finisher)
    assert state.game[0, layout.STARTER] == expected
    assert state.game[0, layout.CURRENT] == expected


def test_next_round_starter__highest_reveal_sum_in_random_games():
    rules = SkyjoRules(num_players=3, next_round_starter="highest_reveal_sum", target_score=300)
    state = new_games(rules, 32, seed=8)
    policy = np.random.default_rng(9)
    finishers = np.full(32, -1)
    counts = Counter()

    def check(before, events):
        ended = (events & layout.EVENT_ROUND_ENDED) != 0
        finishers[ended] = before.game[ended, layout.FINISHER]
        started = (before.game[:, layout.PHASE] == Phase.INITIAL_REVEAL) & (
            state.game[:, layout.PHASE] == Phase.CHOOSE_SOURCE
        )
        for b in np.flatnonzero(started & (state.game[:, layout.ROUND] > 0)):
            shown = np.where(state.slot_state[b] == layout.FACE_UP, state.grid[b], 0)
            sums = shown.sum(axis=1)
            highs = np.where(state.slot_state[b] == layout.FACE_UP, state.grid[b], -99).max(axis=1)
            best = (sums == sums.max()) & (highs == highs[sums == sums.max()].max())
            assert best[state.game[b, layout.STARTER]]
            counts["later rounds"] += 1
            counts["not the finisher"] += int(state.game[b, layout.STARTER] != finishers[b])

    play_out(state, policy, check)
    assert counts["later rounds"] > 20
    assert counts["not the finisher"] > 0


# ---------------------------------------------------------------- empty draw pile


@pytest.mark.parametrize("mode", ["reshuffle_keep_top", "reshuffle_all"])
def test_empty_draw_pile__reshuffles_in_play_without_losing_cards(mode):
    # 30 cards, 24 in the grids: the draw pile runs out every few turns
    rules = SkyjoRules(deck={v: 3 for v in range(10)}, empty_draw_pile=mode)
    state = new_games(rules, 16, seed=13)
    seen = Counter()

    def check(before, events):
        assert_all_conserved(state)
        refilled = (
            (before.game[:, layout.PHASE] == Phase.CHOOSE_SOURCE)
            & (before.game[:, layout.DRAW_SIZE] == 0)
            & (state.game[:, layout.PHASE] == Phase.PLACE_DRAWN)
        )
        for b in np.flatnonzero(refilled):
            old_pile = before.discard_pile_of(b)
            assert state.game[b, layout.DISCARD_SIZE] == 1
            assert state.game[b, layout.DRAW_SIZE] == old_pile.size - 2
            seen["reshuffles"] += 1
            seen["same top"] += int(state.discard_pile_of(b)[0] == old_pile[-1])

    play_out(state, np.random.default_rng(14), check)
    assert seen["reshuffles"] > 50
    if mode == "reshuffle_keep_top":
        assert seen["same top"] == seen["reshuffles"]
    else:
        assert seen["same top"] < seen["reshuffles"]


# ---------------------------------------------------------------- final reveal


@pytest.mark.parametrize("final_reveal_elimination", [True, False])
def test_final_reveal_elimination__clears_columns_in_seat_then_column_order(
    final_reveal_elimination,
):
    rules = SkyjoRules(num_players=3, final_reveal_elimination=final_reveal_elimination)
    grids = [SUM_10, "3 1 6 0 / 3 4 6 5 / h3 -1 h6 2", "5 9 1 0 / 4 9 1 1 / 6 h9 0 h2"]
    # the finisher's total reaches the target, so the piles stay as the round left them
    state, events = end_round_by_reveal(rules, grids, finisher=0, slot=11, totals=[95, 0, 0])
    assert events & layout.EVENT_GAME_ENDED
    if final_reveal_elimination:
        assert state.discard_pile_of(0).tolist() == [7, 3, 3, 3, 6, 6, 6, 9, 9, 9]
        assert state.seat[0, :, layout.RAW_SCORE].tolist() == [10, 11, 20]
    else:
        assert state.discard_pile_of(0).tolist() == [7]
        assert state.seat[0, :, layout.RAW_SCORE].tolist() == [10, 11 + 9 + 18, 20 + 27]
        assert (state.final_slot_state[0] == layout.FACE_UP).all()
    assert_conserved(state)


# ---------------------------------------------------------------- finisher penalty


@pytest.mark.parametrize(
    ("changes", "finisher_score"),
    [
        ({"finisher_penalty_mode": "none"}, 30),
        ({"finisher_penalty_mode": "multiplier", "finisher_multiplier": 5}, 150),
        ({"finisher_penalty_mode": "flat", "finisher_flat_penalty": 0}, 30),
        ({"finisher_penalty_mode": "flat", "finisher_flat_penalty": 7}, 37),
    ],
)
def test_finisher_penalty_mode__scores_a_beaten_finisher(changes, finisher_score):
    rules = SkyjoRules(**changes)
    state, _ = end_round_by_reveal(
        rules, [SUM_30, "0 1 -1 0 / 1 0 0 -1 / -1 2 0 h0"], finisher=0, slot=11
    )
    assert state.seat[0, :, layout.ROUND_SCORE].tolist() == [finisher_score, 1]
    assert state.seat[0, 0, layout.TIMES_PENALISED] == int(finisher_score != 30)


@pytest.mark.parametrize(
    ("condition", "other", "other_raw", "finisher_score"),
    [
        ("other_le", "0 1 2 0 / 1 0 0 1 / 2 1 0 h2", 10, 20),
        ("other_lt", "0 1 2 0 / 1 0 0 1 / 2 1 0 h2", 10, 10),
        ("other_lt", "0 1 2 0 / 1 0 0 1 / 2 1 0 h1", 9, 20),
        ("other_le", "0 1 2 0 / 1 0 0 1 / 2 1 0 h3", 11, 10),
    ],
)
def test_finisher_penalty_condition__tie_counts_only_for_other_le(
    condition, other, other_raw, finisher_score
):
    rules = SkyjoRules(finisher_penalty_condition=condition)
    state, _ = end_round_by_reveal(rules, [SUM_10, other], finisher=0, slot=11)
    assert state.seat[0, :, layout.ROUND_SCORE].tolist() == [finisher_score, other_raw]


@pytest.mark.parametrize(("only_if_positive", "finisher_score"), [(True, 0), (False, 5)])
def test_finisher_penalty_only_if_positive__spares_a_zero_finisher(
    only_if_positive, finisher_score
):
    rules = SkyjoRules(
        finisher_penalty_mode="flat",
        finisher_flat_penalty=5,
        finisher_penalty_only_if_positive=only_if_positive,
    )
    grids = [". . . 1 / . . . -1 / . . . 0", ". . . -2 / . . . 0 / . . . h0"]
    state, _ = end_round_by_reveal(rules, grids, finisher=0, slot=11)
    assert state.seat[0, :, layout.ROUND_SCORE].tolist() == [finisher_score, -2]


# ---------------------------------------------------------------- game length


@pytest.mark.parametrize("target", [1, 30, 250])
def test_target_score__game_ends_after_the_first_round_reaching_it(target):
    rules = SkyjoRules(num_players=3, target_score=target)
    state = new_games(rules, 24, seed=target)
    rounds = Counter()

    def check(before, events):
        for b in np.flatnonzero(events & layout.EVENT_ROUND_ENDED):
            top = state.seat[b, :, layout.TOTAL].max()
            assert bool(events[b] & layout.EVENT_GAME_ENDED) == (top >= target)
            rounds[int(state.game[b, layout.ROUND])] += 1

    play_out(state, np.random.default_rng(target + 1), check)
    assert (state.total_scores.max(axis=1) >= target).all()
    if target == 1:
        # ends after round 1 unless every total is still <= 0
        assert (state.game[:, layout.ROUND] == 1).mean() > 0.8
    if target == 250:
        assert state.game[:, layout.ROUND].mean() > 2


@pytest.mark.parametrize("max_rounds", [1, 3])
def test_max_rounds__ends_the_game_after_that_many_rounds(max_rounds):
    rules = SkyjoRules(max_rounds=max_rounds, target_score=10_000)
    state = new_games(rules, 16, seed=max_rounds)
    play_out(state, np.random.default_rng(0))
    assert (state.game[:, layout.ROUND] == max_rounds).all()
    assert not state.truncated.any()
    assert (state.total_scores < 10_000).all()


def test_max_rounds__none_still_ends_a_game_after_the_hard_cap():
    # nearly every card is a -2: totals only fall, so no total ever reaches the target
    rules = SkyjoRules(rows=1, cols=2, initial_reveals=1, deck={-2: 30, 1: 2})
    assert rules.max_rounds is None
    state = new_games(rules, 3, seed=41)
    play_out(state, np.random.default_rng(42), max_steps=40_000)
    assert (state.game[:, layout.ROUND] == MAX_ROUNDS).all()
    assert not state.truncated.any()
    assert (state.total_scores < -1000).all()


def test_max_turns_per_round__truncates_the_game_without_scoring():
    rules = SkyjoRules(max_turns_per_round=5)
    state = new_games(rules, 8, seed=21)
    policy = np.random.default_rng(22)
    seen_events = np.zeros(8, np.int32)
    while not state.all_over:
        seen_events |= step(state, random_actions(state, policy))
    assert state.truncated.all()
    assert (state.game[:, layout.TRUNCATED] == 1).all()
    assert (seen_events == layout.EVENT_GAME_ENDED | layout.EVENT_TRUNCATED).all()
    assert (state.game[:, layout.TURN] == 5).all()
    assert (state.game[:, layout.ROUND] == 0).all()
    assert (state.total_scores == 0).all()
    assert not legal_action_mask(state).any()


def test_max_turns_per_round__counts_turns_per_round():
    # 2x2 grids end rounds quickly, so several rounds are scored before a long one is cut
    rules = SkyjoRules(rows=2, cols=2, initial_reveals=1, max_turns_per_round=6)
    state = new_games(rules, 64, seed=23)
    ended_rounds = np.zeros(64, np.int64)
    score_sums = np.zeros((64, 2), np.int64)

    def check(before, events):
        ended = (events & layout.EVENT_ROUND_ENDED) != 0
        ended_rounds[ended] += 1
        score_sums[ended] += state.seat[ended, :, layout.ROUND_SCORE]
        assert (state.game[~state.game_over, layout.TURN] < 6).all()

    play_out(state, np.random.default_rng(24), check)
    truncated = state.truncated
    assert truncated.any()
    assert (state.game[truncated, layout.TURN] == 6).all()
    assert (state.game[:, layout.ROUND] == ended_rounds).all()
    assert ended_rounds[truncated].max() >= 1  # a scored round, then a cut one
    np.testing.assert_array_equal(state.total_scores, score_sums)


# ---------------------------------------------------------------- deck


def test_deck__a_custom_deck_deals_only_its_cards():
    rules = SkyjoRules(num_players=3, deck={-5: 12, 0: 20, 20: 12})
    assert rules.card_values.tolist() == [-5, 0, 20]
    state = new_games(rules, 12, seed=31)
    assert state.draw_pile.shape == (12, 44)
    values = set()

    def check(before, events):
        assert_all_conserved(state)
        live = state.slot_state != layout.CLEARED
        values.update(np.unique(state.grid[live]).tolist())
        assert set(np.unique(state.final_grid).tolist()) <= {-5, 0, 20}

    play_out(state, np.random.default_rng(32), check)
    assert values == {-5, 0, 20}
    assert (state.seat[:, :, layout.RAW_SCORE] % 5 == 0).all()
