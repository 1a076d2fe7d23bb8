"""Known-answer tests: one (or more) per test vector of RULES.md §13.

States are hand-built (`build_state`) or dealt from a stacked deck; every hand-built state
holds the whole deck (grids + draw pile + discard pile + held card), so card conservation
is checked after each action as well. The helpers here are shared with `test_variants`.
"""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import numpy as np
import pytest

from skyjo_env.core import kernels, layout
from skyjo_env.core.actions import ActionKind, Phase, action_id
from skyjo_env.core.engine import (
    IllegalActionError,
    legal_action_mask,
    new_batch,
    reset,
    rules_params,
    step,
    winners,
)
from skyjo_env.core.rules import SkyjoRules

# ---------------------------------------------------------------- helpers


def parse_grid(text: str, rules: SkyjoRules) -> tuple[list[int], list[int]]:
    """Values and slot states of a grid written row by row: ``"5 h3 . / ..."``.

    A number is a face-up card, ``h<number>`` a face-down one, ``.`` a cleared slot.
    """
    tokens = text.replace("/", " ").split()
    if len(tokens) != rules.num_slots:
        raise ValueError(f"grid {text!r} has {len(tokens)} slots, expected {rules.num_slots}")
    values, states = [], []
    for token in tokens:
        if token == ".":
            values.append(0)
            states.append(layout.CLEARED)
        elif token.startswith("h"):
            values.append(int(token[1:]))
            states.append(layout.HIDDEN)
        else:
            values.append(int(token))
            states.append(layout.FACE_UP)
    return values, states


def remaining_cards(rules: SkyjoRules, used: list[int]) -> list[int]:
    """The deck minus ``used`` (a multiset), in increasing order."""
    left = Counter(rules.deck_array().tolist())
    left.subtract(used)
    if min(left.values()) < 0:
        raise ValueError(f"the deck does not hold these cards: {dict(-left)}")
    return sorted(left.elements())


def build_state(
    rules: SkyjoRules,
    grids: list[str],
    discard: list[int],
    *,
    current: int = 0,
    phase: Phase = Phase.CHOOSE_SOURCE,
    finisher: int = -1,
    held: int | None = None,
    draw_top: list[int] = (),
    draw: list[int] | None = None,
    totals: list[int] | None = None,
    seed: int = 0,
):
    """A batch of one game in the given position.

    Args:
        grids: One grid per seat (see `parse_grid`).
        discard: The discard pile, bottom to top.
        held: The held card in the PLACE phases.
        draw_top: Cards on top of the draw pile, in the order they will be drawn.
        draw: The whole draw pile (bottom to top); by default the rest of the deck
            (in increasing order) under ``draw_top``, so that the state holds the deck.
        totals: Total scores before this round.
        seed: Seed of the game's random stream (for reshuffles and later rounds).
    """
    state = new_batch(rules, 1)
    reset(state, [seed])
    used = list(discard) + list(draw_top) + ([held] if held is not None else [])
    for p, text in enumerate(grids):
        values, states = parse_grid(text, rules)
        state.grid[0, p] = values
        state.slot_state[0, p] = states
        used += [v for v, s in zip(values, states, strict=True) if s != layout.CLEARED]
    if draw is None:
        draw = remaining_cards(rules, used) + list(reversed(draw_top))
    state.draw_pile[0, : len(draw)] = draw
    state.discard_pile[0, : len(discard)] = discard
    game = state.game[0]
    game[layout.DRAW_SIZE] = len(draw)
    game[layout.DISCARD_SIZE] = len(discard)
    game[layout.PHASE] = phase
    game[layout.CURRENT] = current
    game[layout.FINISHER] = finisher
    game[layout.HELD] = 0 if held is None else held
    game[layout.TURN] = 10
    game[layout.REVEALS_DONE] = rules.num_players * rules.initial_reveals
    if totals is not None:
        state.seat[0, :, layout.TOTAL] = totals
    return state


def card_multiset(state, b: int = 0) -> Counter:
    """Every card of game ``b``: grids (not cleared), both piles and a held card."""
    cards = state.grid[b][state.slot_state[b] != layout.CLEARED].tolist()
    cards += state.draw_pile_of(b).tolist() + state.discard_pile_of(b).tolist()
    if state.game[b, layout.PHASE] in (Phase.PLACE_DRAWN, Phase.PLACE_DISCARD):
        cards.append(int(state.game[b, layout.HELD]))
    return Counter(cards)


def assert_conserved(state, b: int = 0) -> None:
    assert card_multiset(state, b) == Counter(state.deck.tolist())


def play(state, *actions: int) -> list[int]:
    """Step a batch of one through ``actions``; returns the events, checking conservation."""
    events = []
    for action in actions:
        events.append(int(step(state, np.array([action]))[0]))
        assert_conserved(state)
    return events


def draw(rules):
    return action_id(ActionKind.DRAW, None, rules.num_slots)


def take(rules):
    return action_id(ActionKind.TAKE_DISCARD, None, rules.num_slots)


def discard_drawn(rules):
    return action_id(ActionKind.DISCARD_DRAWN, None, rules.num_slots)


def place(rules, slot):
    return action_id(ActionKind.PLACE, slot, rules.num_slots)


def reveal(rules, slot):
    return action_id(ActionKind.REVEAL, slot, rules.num_slots)


def turn_reveal(rules, slot):
    """A whole turn: draw, discard the drawn card, reveal ``slot``."""
    return (draw(rules), discard_drawn(rules), reveal(rules, slot))


def end_round_by_reveal(rules, grids, finisher, slot, totals=None):
    """Seat ``finisher`` has finished; the last seat of the final lap reveals ``slot``.

    Returns the state after that reveal (which ends the round) and the event bits.
    """
    last = (finisher - 1) % rules.num_players
    state = build_state(
        rules,
        grids,
        discard=[7],
        current=last,
        phase=Phase.REVEAL_AFTER_DISCARD,
        finisher=finisher,
        totals=totals,
    )
    (events,) = play(state, reveal(rules, slot))
    assert events & layout.EVENT_ROUND_ENDED
    # the raw scores are the sums of the grids the round ended with; the penalised
    # scores are checked against hand-written answers by each test
    kept = np.where(state.final_slot_state[0] != layout.CLEARED, state.final_grid[0], 0)
    assert state.seat[0, :, layout.RAW_SCORE].tolist() == kept.sum(axis=1).tolist()
    return state, events


def penalty(raw, finisher, rules):
    """The engine's penalty kernel on given raw scores (a unit check beside the games)."""
    scores, _ = kernels.apply_finisher_penalty(
        np.array(raw, np.int64), finisher, rules_params(rules)
    )
    return scores.tolist()


SUM_10 = "0 1 2 0 / 1 0 0 1 / 2 1 0 2"
SUM_30 = "5 1 2 0 / 1 4 3 1 / 2 1 0 10"

# ---------------------------------------------------------------- vectors 1-5: penalty


def test_vector_01_finisher_penalty__tie_with_another_seat_doubles_the_finisher():
    rules = SkyjoRules(num_players=3)
    grids = [SUM_10, "3 0 2 0 / 4 4 0 5 / 2 -1 h3 2", "0 1 2 0 / 1 0 0 1 / 2 1 0 h2"]
    state, events = end_round_by_reveal(rules, grids, finisher=0, slot=11)
    assert not events & layout.EVENT_GAME_ENDED
    assert state.seat[0, :, layout.RAW_SCORE].tolist() == [10, 24, 10]
    assert state.seat[0, :, layout.ROUND_SCORE].tolist() == [20, 24, 10]
    assert state.seat[0, :, layout.TOTAL].tolist() == [20, 24, 10]
    assert state.seat[0, :, layout.TIMES_PENALISED].tolist() == [1, 0, 0]
    assert state.seat[0, :, layout.ROUNDS_FINISHED].tolist() == [1, 0, 0]
    assert penalty([10, 24, 10], 0, rules) == [20, 24, 10]


def test_vector_02_finisher_penalty__strictly_lowest_finisher_keeps_the_score():
    rules = SkyjoRules()
    grids = [SUM_10, "0 1 2 0 / 1 0 0 1 / 2 1 0 h3"]
    state, _ = end_round_by_reveal(rules, grids, finisher=0, slot=11)
    assert state.seat[0, :, layout.ROUND_SCORE].tolist() == [10, 11]
    assert state.seat[0, 0, layout.TIMES_PENALISED] == 0
    assert penalty([10, 11], 0, rules) == [10, 11]


@pytest.mark.parametrize(("only_if_positive", "expected"), [(True, -4), (False, -8)])
def test_vector_03_finisher_penalty__negative_score_only_doubled_without_positive_rule(
    only_if_positive, expected
):
    rules = SkyjoRules(finisher_penalty_only_if_positive=only_if_positive)
    grids = [". . . -2 / . . . -1 / . . . -1", ". . . -2 / . . . -2 / . . . h-1"]
    state, _ = end_round_by_reveal(rules, grids, finisher=0, slot=11)
    assert state.seat[0, :, layout.RAW_SCORE].tolist() == [-4, -5]
    assert state.seat[0, :, layout.ROUND_SCORE].tolist() == [expected, -5]
    assert penalty([-4, -5], 0, rules) == [expected, -5]


@pytest.mark.parametrize("only_if_positive", [True, False])
def test_vector_04_finisher_penalty__zero_stays_zero(only_if_positive):
    rules = SkyjoRules(finisher_penalty_only_if_positive=only_if_positive)
    grids = [". . . 1 / . . . -1 / . . . 0", ". . . -2 / . . . 0 / . . . h0"]
    state, _ = end_round_by_reveal(rules, grids, finisher=0, slot=11)
    assert state.seat[0, :, layout.ROUND_SCORE].tolist() == [0, -2]
    assert state.seat[0, 0, layout.TIMES_PENALISED] == 0


@pytest.mark.parametrize(
    ("mode", "multiplier", "flat", "expected"),
    [
        ("multiplier", 2, 0, 60),
        ("flat", 2, 10, 40),
        ("flat_then_multiplier", 3, 20, 150),
        ("multiplier_then_flat", 3, 20, 110),
    ],
)
def test_vector_05_finisher_penalty__modes(mode, multiplier, flat, expected):
    rules = SkyjoRules(
        finisher_penalty_mode=mode, finisher_multiplier=multiplier, finisher_flat_penalty=flat
    )
    grids = [SUM_30, "0 1 -1 0 / 1 0 0 -1 / -1 2 0 h0"]
    state, _ = end_round_by_reveal(rules, grids, finisher=0, slot=11)
    assert state.seat[0, :, layout.RAW_SCORE].tolist() == [30, 1]
    assert state.seat[0, :, layout.ROUND_SCORE].tolist() == [expected, 1]
    assert state.seat[0, 0, layout.TIMES_PENALISED] == 1
    assert penalty([30, 1], 0, rules) == [expected, 1]


# ---------------------------------------------------------------- vectors 6-10: eliminations


def test_vector_06_column_elimination__taken_discard_completes_a_column():
    rules = SkyjoRules()
    grids = ["5 1 2 3 / 5 4 6 7 / 9 2 3 h4", "1 2 3 4 / 2 3 4 5 / 3 4 5 h6"]
    state = build_state(rules, grids, discard=[8, 2, 5])
    play(state, take(rules))
    assert state.game[0, layout.PHASE] == Phase.PLACE_DISCARD
    assert state.game[0, layout.HELD] == 5
    play(state, place(rules, 8))
    assert state.discard_pile_of(0).tolist() == [8, 2, 9, 5, 5, 5]
    assert state.slot_state[0, 0, [0, 4, 8]].tolist() == [layout.CLEARED] * 3
    assert state.seat[0, 0, layout.LINES_ELIMINATED] == 1
    assert state.game[0, layout.FINISHER] == -1  # slot 11 is still face down
    assert state.game[0, layout.CURRENT] == 1
    # seat 1 finishes, seat 0 plays the last turn; the cleared column scores nothing
    play(state, *turn_reveal(rules, 11))
    assert state.game[0, layout.FINISHER] == 1
    events = play(state, *turn_reveal(rules, 11))
    assert events[-1] & layout.EVENT_ROUND_ENDED
    assert state.seat[0, :, layout.RAW_SCORE].tolist() == [1 + 2 + 3 + 4 + 6 + 7 + 2 + 3 + 4, 42]
    assert state.seat[0, :, layout.ROUND_SCORE].tolist() == [32, 84]


def test_vector_07_column_elimination__revealing_after_a_discard_completes_a_column():
    rules = SkyjoRules()
    grids = ["1 2 3 4 / 2 1 3 5 / 4 5 h3 h6", "1 2 3 4 / 2 3 4 5 / 3 4 5 h6"]
    state = build_state(rules, grids, discard=[8], draw_top=[7])
    play(state, draw(rules))
    assert state.game[0, layout.PHASE] == Phase.PLACE_DRAWN
    assert state.game[0, layout.HELD] == 7
    play(state, discard_drawn(rules))
    assert state.discard_pile_of(0).tolist() == [8, 7]
    play(state, reveal(rules, 10))
    assert state.discard_pile_of(0).tolist() == [8, 7, 3, 3, 3]
    assert state.slot_state[0, 0, [2, 6, 10]].tolist() == [layout.CLEARED] * 3
    assert state.slot_state[0, 0, 11] == layout.HIDDEN
    assert state.game[0, layout.CURRENT] == 1


@pytest.mark.parametrize(
    ("final_reveal_elimination", "raw", "scores"),
    [(True, [10, 6], [20, 6]), (False, [10, 30], [10, 30])],
)
def test_vector_08_final_reveal__elimination_at_the_reveal_changes_the_penalty(
    final_reveal_elimination, raw, scores
):
    rules = SkyjoRules(final_reveal_elimination=final_reveal_elimination)
    grids = [SUM_10, "8 1 0 2 / 8 0 1 -1 / h8 2 0 h1"]
    state, _ = end_round_by_reveal(rules, grids, finisher=0, slot=11)
    assert state.seat[0, :, layout.RAW_SCORE].tolist() == raw
    assert state.seat[0, :, layout.ROUND_SCORE].tolist() == scores
    column_state = state.final_slot_state[0, 1, [0, 4, 8]].tolist()
    if final_reveal_elimination:
        assert column_state == [layout.CLEARED] * 3
        assert state.seat[0, 1, layout.LINES_ELIMINATED] == 1
    else:
        assert column_state == [layout.FACE_UP] * 3
        assert state.seat[0, 1, layout.LINES_ELIMINATED] == 0


@pytest.mark.parametrize("final_reveal_elimination", [True, False])
def test_vector_09_column_elimination__minus_two_column_is_removed(final_reveal_elimination):
    rules = SkyjoRules(final_reveal_elimination=final_reveal_elimination)
    grids = ["-2 1 2 0 / -2 0 1 3 / h-2 2 0 1", SUM_30]
    state, _ = end_round_by_reveal(rules, grids, finisher=1, slot=8)
    assert state.final_slot_state[0, 0, [0, 4, 8]].tolist() == [layout.CLEARED] * 3
    assert state.seat[0, :, layout.RAW_SCORE].tolist() == [10, 30]
    assert state.seat[0, :, layout.ROUND_SCORE].tolist() == [10, 60]


def test_vector_10_finishing__clearing_the_last_face_down_card_finishes():
    rules = SkyjoRules()
    grids = ["4 1 2 3 / 4 2 3 5 / h4 3 5 6", "1 2 3 4 / 2 3 4 5 / 3 4 5 h6"]
    state = build_state(rules, grids, discard=[8, 9], phase=Phase.REVEAL_AFTER_DISCARD)
    play(state, reveal(rules, 8))
    assert state.slot_state[0, 0, [0, 4, 8]].tolist() == [layout.CLEARED] * 3
    assert state.game[0, layout.FINISHER] == 0
    assert state.game[0, layout.CURRENT] == 1
    assert state.game[0, layout.PHASE] == Phase.CHOOSE_SOURCE


def test_vector_10_finishing__an_emptied_grid_finishes_and_scores_zero():
    rules = SkyjoRules()
    grids = ["4 . . . / 4 . . . / h4 . . .", "1 2 3 4 / 2 3 4 5 / 3 4 5 h6"]
    state = build_state(rules, grids, discard=[8, 9], phase=Phase.REVEAL_AFTER_DISCARD)
    play(state, reveal(rules, 8))
    assert (state.slot_state[0, 0] == layout.CLEARED).all()
    assert state.game[0, layout.FINISHER] == 0
    events = play(state, *turn_reveal(rules, 11))
    assert events[-1] & layout.EVENT_ROUND_ENDED
    assert state.seat[0, :, layout.ROUND_SCORE].tolist() == [0, 42]
    assert state.seat[0, :, layout.ROUNDS_FINISHED].tolist() == [1, 0]


# ---------------------------------------------------------------- vector 11: final lap


def test_vector_11_final_lap__seats_after_the_finisher_play_once_and_finisher_starts_next():
    rules = SkyjoRules(num_players=4)
    grids = [
        "1 2 3 4 / 0 1 2 3 / -1 0 1 h2",  # one face-down card: will reveal everything
        "2 3 4 5 / 1 2 3 4 / 0 h1 h2 h3",
        "0 1 2 3 / -1 0 1 2 / -2 -1 0 h1",  # the finisher-to-be
        "3 4 5 6 / 2 3 4 5 / h1 h2 h3 h4",
    ]
    state = build_state(rules, grids, discard=[7], current=2)
    movers = []
    for slot in (11, 11, 11, 11):
        movers.append(int(state.game[0, layout.CURRENT]))
        events = play(state, *turn_reveal(rules, slot))
        if movers[-1] == 2:
            assert state.game[0, layout.FINISHER] == 2
    assert movers == [2, 3, 0, 1]
    assert events[-1] & layout.EVENT_ROUND_ENDED
    assert not events[-1] & layout.EVENT_GAME_ENDED
    # seat 0 also revealed everything, but seat 2 is the only finisher
    assert state.seat[0, :, layout.ROUNDS_FINISHED].tolist() == [0, 0, 1, 0]
    assert state.game[0, layout.PREV_FINISHER] == 2
    assert state.game[0, layout.ROUND] == 1
    assert state.seat[0, :, layout.RAW_SCORE].tolist() == [18, 30, 6, 42]
    assert state.seat[0, :, layout.ROUND_SCORE].tolist() == [18, 30, 6, 42]
    # next round: the initial reveals (seats 0, 1, 2, 3, 0, ...), then seat 2 starts
    assert state.game[0, layout.PHASE] == Phase.INITIAL_REVEAL
    revealers = []
    while state.game[0, layout.PHASE] == Phase.INITIAL_REVEAL:
        revealers.append(int(state.game[0, layout.CURRENT]))
        slot = int(np.flatnonzero(legal_action_mask(state)[0])[0])
        play(state, slot)
    assert revealers == [0, 1, 2, 3, 0, 1, 2, 3]
    assert state.game[0, layout.STARTER] == 2
    assert state.game[0, layout.CURRENT] == 2


def _turn_movers_by_round(rules, seed, games):
    """Random legal play; per game and round, the seat of each turn and the finisher."""
    state = new_batch(rules, games)
    reset(state, np.random.default_rng(seed))
    policy = np.random.default_rng(seed + 1)
    rounds = [[{"movers": [], "finisher": None}] for _ in range(games)]
    while not state.all_over:
        mask = legal_action_mask(state)
        actions = np.where(state.game_over, -1, np.argmax(policy.random(mask.shape) * mask, axis=1))
        starting_turn = state.game[:, layout.PHASE] == Phase.CHOOSE_SOURCE
        for b in np.flatnonzero(starting_turn):
            rounds[b][-1]["movers"].append(int(state.game[b, layout.CURRENT]))
        finisher = state.game[:, layout.FINISHER].copy()
        events = step(state, actions)
        for b in np.flatnonzero(events & layout.EVENT_ROUND_ENDED):
            rounds[b][-1]["finisher"] = int(finisher[b])
            if not events[b] & layout.EVENT_GAME_ENDED:
                rounds[b].append({"movers": [], "finisher": None})
    assert not state.truncated.any()
    return rounds


def test_vector_11_final_lap__random_games_follow_seat_order_and_finisher_starts_next():
    rules = SkyjoRules(num_players=4)
    checked_rounds = 0
    for game_rounds in _turn_movers_by_round(rules, seed=11, games=24):
        for number, record in enumerate(game_rounds):
            movers, finisher = record["movers"], record["finisher"]
            assert finisher is not None and finisher >= 0
            # turns go around the table in seat order
            assert all((b - a) % 4 == 1 for a, b in pairwise(movers))
            # the finisher's turn is followed by exactly one turn of each other seat
            last_of_finisher = len(movers) - 1 - movers[::-1].index(finisher)
            assert movers[last_of_finisher + 1 :] == [(finisher + k) % 4 for k in (1, 2, 3)]
            if number > 0:
                assert movers[0] == game_rounds[number - 1]["finisher"]
            checked_rounds += 1
    assert checked_rounds > 24


# ---------------------------------------------------------------- vector 12: first starter


def stacked_deck(rules: SkyjoRules, first_cards: list[list[int]]) -> list[int]:
    """A dealing order whose seats' first slots hold ``first_cards[seat]``."""
    pool = remaining_cards(rules, [card for cards in first_cards for card in cards])
    order = []
    for cards in first_cards:
        fill = rules.num_slots - len(cards)
        order += list(cards) + pool[:fill]
        pool = pool[fill:]
    return order + pool


def first_round_starter(rules, first_cards, seed):
    """Deal a stacked deck, reveal slots 0 and 1 of every seat, return the starter."""
    state = new_batch(rules, 1)
    reset(state, [seed], stacked_deck=stacked_deck(rules, first_cards))
    for p, cards in enumerate(first_cards):
        assert state.grid[0, p, : len(cards)].tolist() == list(cards)
    for slot in (0, 1):
        for seat in range(rules.num_players):
            assert state.game[0, layout.CURRENT] == seat
            play(state, reveal(rules, slot))
    assert state.game[0, layout.PHASE] == Phase.CHOOSE_SOURCE
    assert state.game[0, layout.CURRENT] == state.game[0, layout.STARTER]
    return int(state.game[0, layout.STARTER])


@pytest.mark.parametrize(
    ("first_cards", "expected"),
    [
        ([[12, -2], [4, 2]], 0),  # higher sum
        ([[5, 5], [12, -2]], 1),  # equal sums: the higher single card
        ([[1, 1], [3, 3], [6, 0]], 2),
        ([[6, 0], [3, 3], [2, 2]], 0),
    ],
)
def test_vector_12_first_starter__highest_sum_then_highest_card(first_cards, expected):
    rules = SkyjoRules(num_players=len(first_cards))
    for seed in range(5):
        assert first_round_starter(rules, first_cards, seed) == expected


@pytest.mark.parametrize(
    ("first_cards", "tied"),
    [([[6, 4], [6, 4]], {0, 1}), ([[6, 4], [1, 1], [4, 6]], {0, 2})],
)
def test_vector_12_first_starter__full_tie_is_a_seeded_random_choice(first_cards, tied):
    rules = SkyjoRules(num_players=len(first_cards))
    starters = [first_round_starter(rules, first_cards, seed) for seed in range(40)]
    assert set(starters) == tied
    assert [first_round_starter(rules, first_cards, seed) for seed in range(40)] == starters


# ---------------------------------------------------------------- vector 13: empty draw pile


def small_deck_rules(**changes):
    # 2 x 12 grid cards + {3, 7, 1, 9}: the whole deck is on the table
    deck = Counter([3, 7, 1, 9]) + Counter(parse_grid(GRID_A, SkyjoRules())[0])
    deck += Counter(parse_grid(GRID_B, SkyjoRules())[0])
    return SkyjoRules(deck=dict(deck), **changes)


GRID_A = "0 1 2 4 / 2 5 6 h8 / 10 11 12 h12"
GRID_B = "-1 1 2 4 / 2 5 6 h8 / 10 11 -2 h-2"


def test_vector_13_empty_draw_pile__keep_top_reshuffles_the_rest():
    orders = set()
    for seed in range(60):
        rules = small_deck_rules()
        state = build_state(rules, [GRID_A, GRID_B], discard=[3, 7, 1, 9], draw=[], seed=seed)
        assert state.deck.size == 28
        assert_conserved(state)
        play(state, draw(rules))
        held = int(state.game[0, layout.HELD])
        pile = state.draw_pile_of(0).tolist()
        assert state.discard_pile_of(0).tolist() == [9]
        assert sorted(pile + [held]) == [1, 3, 7]
        assert state.game[0, layout.DRAW_SIZE] == 2
        orders.add((*pile, held))
    assert len(orders) == 6  # every order of {3, 7, 1} occurs over the seeds


def test_vector_13_empty_draw_pile__reshuffle_all_flips_a_new_top():
    tops = set()
    for seed in range(60):
        rules = small_deck_rules(empty_draw_pile="reshuffle_all")
        state = build_state(rules, [GRID_A, GRID_B], discard=[3, 7, 1, 9], draw=[], seed=seed)
        play(state, draw(rules))
        (top,) = state.discard_pile_of(0).tolist()
        pile = state.draw_pile_of(0).tolist()
        assert sorted(pile + [top, int(state.game[0, layout.HELD])]) == [1, 3, 7, 9]
        assert state.game[0, layout.DRAW_SIZE] == 2
        tops.add(top)
    assert tops == {1, 3, 7, 9}


@pytest.mark.parametrize("mode", ["reshuffle_keep_top", "reshuffle_all"])
def test_vector_13_empty_draw_pile__all_150_cards_stay_in_play(mode):
    rules = SkyjoRules(empty_draw_pile=mode)
    grids = ["5 1 2 3 / 5 4 6 7 / 9 2 3 h4", "1 2 3 4 / 2 3 4 5 / 3 4 5 h6"]
    cards = [v for text in grids for v in parse_grid(text, rules)[0]]
    rest = remaining_cards(rules, cards)
    rest.remove(9)
    state = build_state(rules, grids, discard=rest + [9], draw=[])
    assert state.game[0, layout.DISCARD_SIZE] == 126
    assert_conserved(state)
    play(state, draw(rules))
    assert state.game[0, layout.DISCARD_SIZE] == 1
    assert state.game[0, layout.DRAW_SIZE] == 124
    if mode == "reshuffle_keep_top":
        assert state.discard_pile_of(0).tolist() == [9]
        pile = state.draw_pile_of(0).tolist() + [int(state.game[0, layout.HELD])]
        assert Counter(pile) == Counter(rest)
        assert pile != rest  # shuffled, not kept in order
    # play on: the game goes on normally with 150 cards (checked by `play`)
    play(state, discard_drawn(rules), reveal(rules, 11), *turn_reveal(rules, 11))
    assert state.game[0, layout.ROUND] == 1


# ---------------------------------------------------------------- vector 14: game end

FLAT_GRID = ". . . 0 / . . . 1 / . . . -1"


@pytest.mark.parametrize(
    ("totals", "over", "winning"),
    [
        ([101, 60, 60, 75], True, [1, 2]),
        ([99, 80, 70, 75], False, None),
        ([100, 80, 70, 75], True, [2]),
        ([40, 100, 40, 99], True, [0, 2]),
    ],
)
def test_vector_14_game_end__a_total_reaching_the_target_ends_the_game(totals, over, winning):
    rules = SkyjoRules(num_players=4)
    grids = [FLAT_GRID] * 3 + [". . . 0 / . . . 1 / . . . h-1"]
    state, events = end_round_by_reveal(rules, grids, finisher=0, slot=11, totals=totals)
    assert state.seat[0, :, layout.ROUND_SCORE].tolist() == [0, 0, 0, 0]
    assert state.seat[0, :, layout.TOTAL].tolist() == totals
    assert bool(events & layout.EVENT_GAME_ENDED) == over
    assert bool(state.game_over[0]) == over
    if over:
        assert winners(state, 0) == winning
        assert not legal_action_mask(state).any()
    else:
        assert state.game[0, layout.PHASE] == Phase.INITIAL_REVEAL
        assert state.game[0, layout.ROUND] == 1


def test_vector_14_game_end__round_score_pushes_the_total_to_exactly_the_target():
    rules = SkyjoRules()
    grids = [SUM_10, "0 1 2 0 / 1 0 0 1 / 2 1 0 h3"]
    state, events = end_round_by_reveal(rules, grids, finisher=0, slot=11, totals=[90, 0])
    assert state.seat[0, :, layout.TOTAL].tolist() == [100, 11]
    assert events & layout.EVENT_GAME_ENDED
    assert winners(state, 0) == [1]


# ---------------------------------------------------------------- vector 15: rows


def test_vector_15_row_elimination__crossing_column_and_row_go_together():
    rules = SkyjoRules(row_elimination=True)
    grids = ["h1 1 1 1 / 1 2 6 9 / 1 3 7 10", "1 2 3 4 / 2 3 4 5 / 3 4 5 h6"]
    state = build_state(rules, grids, discard=[8, 12], phase=Phase.REVEAL_AFTER_DISCARD)
    play(state, reveal(rules, 0))
    cleared = np.flatnonzero(state.slot_state[0, 0] == layout.CLEARED).tolist()
    assert cleared == [0, 1, 2, 3, 4, 8]
    remaining = np.flatnonzero(state.slot_state[0, 0] != layout.CLEARED).tolist()
    assert remaining == [5, 6, 7, 9, 10, 11]
    assert state.discard_pile_of(0).tolist() == [8, 12, 1, 1, 1, 1, 1, 1]
    assert state.seat[0, 0, layout.LINES_ELIMINATED] == 2
    assert state.game[0, layout.FINISHER] == 0  # nothing face down is left


# ---------------------------------------------------------------- vector 16: illegal


def test_vector_16_illegal_action__taken_discard_cannot_be_put_back():
    rules = SkyjoRules()
    grids = ["5 1 2 3 / 5 4 6 7 / 9 2 3 h4", "1 2 3 4 / 2 3 4 5 / 3 4 5 h6"]
    state = build_state(rules, grids, discard=[8, 2, 5])
    play(state, take(rules))
    before = state.copy()
    assert not legal_action_mask(state)[0, discard_drawn(rules)]
    with pytest.raises(IllegalActionError, match="must be placed in the grid") as info:
        step(state, np.array([discard_drawn(rules)]))
    assert "DISCARD_DRAWN" in str(info.value)
    assert "PLACE_DISCARD" in str(info.value)
    for array, original in zip(state.arrays, before.arrays, strict=True):
        np.testing.assert_array_equal(array, original)
