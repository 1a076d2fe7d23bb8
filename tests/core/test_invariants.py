"""Invariants over thousands of seeded random games, driven through the batched API.

Every configuration plays a batch of games to the end with uniformly random legal actions
drawn from a `np.random.Generator`. After every step, vectorised checks run on every game:
card conservation, non-empty masks while running, no matching line left in a live grid,
a face-down card for the seat to move, scores and totals of every finished round
recomputed from the final grids. On a sample of states, every action is tried on a copy:
masked-legal ones must succeed and all others must raise `IllegalActionError` without
changing anything.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from skyjo_env.core import layout
from skyjo_env.core.actions import Phase
from skyjo_env.core.engine import (
    IllegalActionError,
    legal_action_mask,
    new_batch,
    reset,
    step,
    unseen_counts,
)
from skyjo_env.core.rules import MAX_ROUNDS, SkyjoRules, load_rules

CONFIGS = {
    "official-2p": (SkyjoRules(), 256),
    "official-3p": (SkyjoRules(num_players=3), 256),
    "official-4p": (SkyjoRules(num_players=4), 256),
    "official-8p": (SkyjoRules(num_players=8), 128),
    # the most seats the official deck allows (146 of 150 cards dealt): a draw pile of 3
    # to 5 cards, so reshuffles in nearly every round
    "official-12p": (SkyjoRules(num_players=12), 64),
    "online-2p": (load_rules("online"), 256),
    "online-4p": (load_rules("online", num_players=4), 256),
    "2x3-rows-random-reveals-3p": (
        SkyjoRules(
            num_players=3,
            rows=2,
            cols=3,
            row_elimination=True,
            initial_reveal_mode="random",
            initial_reveals=2,
        ),
        256,
    ),
    "2x2-choice-setup-eliminations-3p": (
        # 3 of 4 slots face up always complete a line: every setup eliminates
        SkyjoRules(
            num_players=3,
            rows=2,
            cols=2,
            initial_reveals=3,
            row_elimination=True,
            finisher_penalty_condition="other_lt",
            target_score=40,
        ),
        128,
    ),
    "tight-deck-reshuffle-all-2p": (
        SkyjoRules(
            deck={v: 3 for v in range(-2, 8)},
            empty_draw_pile="reshuffle_all",
            initial_reveals=0,
            next_round_starter="highest_reveal_sum",
            target_score=60,
        ),
        256,
    ),
    "2x2-no-final-elimination-8p": (
        SkyjoRules(
            num_players=8,
            rows=2,
            cols=2,
            initial_reveals=1,
            row_elimination=True,
            final_reveal_elimination=False,
            finisher_penalty_mode="multiplier_then_flat",
            finisher_multiplier=3,
            finisher_flat_penalty=5,
            finisher_penalty_condition="other_lt",
            target_score=40,
        ),
        256,
    ),
    "4x4-no-columns-max-rounds-4p": (
        SkyjoRules(
            num_players=4,
            rows=4,
            cols=4,
            initial_reveals=3,
            column_elimination=False,
            row_elimination=True,
            finisher_penalty_mode="flat",
            finisher_flat_penalty=10,
            finisher_penalty_only_if_positive=False,
            max_rounds=2,
            target_score=1000,
        ),
        128,
    ),
}

PLACE_PHASES = (Phase.PLACE_DRAWN, Phase.PLACE_DISCARD)
#: seat fields that change only when a round is scored
SCORE_FIELDS = [
    layout.TOTAL,
    layout.ROUND_SCORE,
    layout.RAW_SCORE,
    layout.ROUNDS_FINISHED,
    layout.TIMES_PENALISED,
]


def expected_round_scores(raw: list[int], finisher: int, rules: SkyjoRules) -> list[int]:
    """Round scores from raw scores, as RULES.md §11 states them (not the engine's code)."""
    s = raw[finisher]
    others = raw[:finisher] + raw[finisher + 1 :]
    if rules.finisher_penalty_condition == "other_le":
        beaten = min(others) <= s
    else:
        beaten = min(others) < s
    if not beaten or (rules.finisher_penalty_only_if_positive and s <= 0):
        return list(raw)
    m, f = rules.finisher_multiplier, rules.finisher_flat_penalty
    penalised = {
        "multiplier": s * m,
        "flat": s + f,
        "flat_then_multiplier": (s + f) * m,
        "multiplier_then_flat": s * m + f,
        "none": s,
    }[rules.finisher_penalty_mode]
    return [penalised if p == finisher else score for p, score in enumerate(raw)]


def test_expected_round_scores__follows_the_rules_vectors():
    # the oracle of the invariants, on RULES.md §13 vectors 1-5
    assert expected_round_scores([10, 24, 10], 0, SkyjoRules()) == [20, 24, 10]
    assert expected_round_scores([10, 11], 0, SkyjoRules()) == [10, 11]
    assert expected_round_scores([-4, -5], 0, SkyjoRules()) == [-4, -5]
    no_positive_rule = SkyjoRules(finisher_penalty_only_if_positive=False)
    assert expected_round_scores([-4, -5], 0, no_positive_rule) == [-8, -5]
    assert expected_round_scores([1, 0, 30], 2, SkyjoRules(num_players=3)) == [1, 0, 60]
    flat_mult = SkyjoRules(
        finisher_penalty_mode="flat_then_multiplier",
        finisher_flat_penalty=20,
        finisher_multiplier=3,
    )
    assert expected_round_scores([30, 1], 0, flat_mult) == [150, 1]
    assert expected_round_scores(
        [30, 1], 0, flat_mult.replace(finisher_penalty_mode="multiplier_then_flat")
    ) == [110, 1]


def random_actions(mask: np.ndarray, over: np.ndarray, policy: np.random.Generator):
    """A uniformly random legal action per running game (int64), -1 where over."""
    actions = np.argmax(policy.random(mask.shape) * mask, axis=1)
    actions[over] = -1
    return actions


class Checker:
    """Vectorised invariants of one batch, plus per-game checks where something happened."""

    def __init__(self, state, policy: np.random.Generator):
        self.state = state
        self.rules = state.rules
        self.policy = policy
        deck = state.deck.astype(np.int64)
        self.low = int(deck.min())
        self.num_values = int(deck.max()) - self.low + 1
        self.expected = np.bincount(deck - self.low, minlength=self.num_values)
        self.positions = np.arange(deck.size)
        self.rounds_checked = 0
        self.legality_checked = 0

    # ------------------------------------------------------------ every step

    def check_cards(self) -> None:
        """Grids (not cleared) + draw pile + discard pile + held card == the deck, per game."""
        state, batch, bins = self.state, self.state.batch_size, self.num_values
        offset = (bins * np.arange(batch))[:, None]
        counts = np.zeros(batch * bins)
        parts = [
            (state.grid.reshape(batch, -1), state.slot_state.reshape(batch, -1) != layout.CLEARED),
            (state.draw_pile, self.positions < state.game[:, layout.DRAW_SIZE, None]),
            (state.discard_pile, self.positions < state.game[:, layout.DISCARD_SIZE, None]),
            (
                state.game[:, layout.HELD, None],
                np.isin(state.game[:, layout.PHASE], PLACE_PHASES)[:, None],
            ),
        ]
        for cards, counted in parts:
            index = cards - np.int64(self.low)
            # slots and pile entries that are not counted may hold anything
            np.clip(index, 0, bins - 1, out=index)
            counts += np.bincount((index + offset).ravel(), counted.ravel(), batch * bins)
        counts = counts.reshape(batch, bins)
        bad = np.flatnonzero((counts != self.expected).any(axis=1))
        assert bad.size == 0, f"cards not conserved in games {bad[:5]}"

    def matching_lines(self, grid, slot_state) -> np.ndarray:
        """bool (N,): which of N grids (N, S) hold a full, face-up, equal line."""
        rules = self.rules
        values = grid.reshape(-1, rules.rows, rules.cols)
        up = slot_state.reshape(-1, rules.rows, rules.cols) == layout.FACE_UP
        found = np.zeros(values.shape[0], bool)
        if rules.column_elimination and rules.rows >= 2:
            equal = (values == values[:, :1, :]).all(axis=1)
            found |= (up.all(axis=1) & equal).any(axis=1)
        if rules.row_elimination and rules.cols >= 2:
            equal = (values == values[:, :, :1]).all(axis=2)
            found |= (up.all(axis=2) & equal).any(axis=1)
        return found

    def check_live(self, mask) -> None:
        state = self.state
        running = ~state.game_over
        assert mask[running].any(axis=1).all(), "a running game has no legal action"
        assert not mask[~running].any(), "a finished game has a legal action"
        assert np.isin(state.slot_state, (layout.HIDDEN, layout.FACE_UP, layout.CLEARED)).all()
        live = running.nonzero()[0]
        hidden = (state.slot_state[live] == layout.HIDDEN).sum(axis=2)
        # whoever is about to move still holds a face-down card
        assert (hidden[np.arange(live.size), state.game[live, layout.CURRENT]] >= 1).all()
        finisher = state.game[live, layout.FINISHER]
        done = finisher >= 0
        assert (hidden[done.nonzero()[0], finisher[done]] == 0).all()
        # lines are checked after every action and once the setup is over (RULES.md §7):
        # during the initial reveals a complete line may wait for the end of the setup
        playing = live[state.game[live, layout.PHASE] != Phase.INITIAL_REVEAL]
        lines = self.matching_lines(state.grid[playing], state.slot_state[playing])
        assert not lines.any(), "a matching line was left in a grid"
        # what an observer cannot know: the draw pile, every face-down card and a card
        # that another seat drew
        observer = (state.game[:, layout.CURRENT] + 1) % self.rules.num_players
        unseen = unseen_counts(state, observer)
        assert (unseen >= 0).all()
        expected = (
            state.game[:, layout.DRAW_SIZE]
            + (state.slot_state == layout.HIDDEN).sum(axis=(1, 2))
            + (state.game[:, layout.PHASE] == Phase.PLACE_DRAWN)
        )
        np.testing.assert_array_equal(unseen.sum(axis=1), expected)

    def check_events(self, before, actions, events) -> None:
        state, rules = self.state, self.rules
        acted = actions >= 0
        np.testing.assert_array_equal(
            state.game[:, layout.DECISIONS], before.game[:, layout.DECISIONS] + acted
        )
        assert not events[~acted].any()
        truncated = (events & layout.EVENT_TRUNCATED) != 0
        ended = (events & layout.EVENT_ROUND_ENDED) != 0
        assert not (truncated & ended).any()
        # a game ends only after a scored round or by the turn cap
        assert ((events & layout.EVENT_GAME_ENDED) != 0)[~ended & ~truncated].sum() == 0
        quiet = acted & ~ended & ~truncated
        np.testing.assert_array_equal(
            state.seat[quiet][:, :, SCORE_FIELDS], before.seat[quiet][:, :, SCORE_FIELDS]
        )
        for b in np.flatnonzero(ended):
            self.check_round(before, b, int(events[b]))
        for b in np.flatnonzero(truncated):
            assert state.game[b, layout.TURN] == rules.max_turns_per_round
            np.testing.assert_array_equal(
                state.seat[b, :, SCORE_FIELDS], before.seat[b, :, SCORE_FIELDS]
            )

    def check_round(self, before, b: int, events: int) -> None:
        state, rules = self.state, self.rules
        finisher = int(before.game[b, layout.FINISHER])
        assert finisher >= 0, "a round ended without a finisher"
        final_grid, final_state = state.final_grid[b], state.final_slot_state[b]
        assert not (final_state == layout.HIDDEN).any()
        if rules.final_reveal_elimination:
            assert not self.matching_lines(final_grid, final_state).any()
        raw = np.where(final_state != layout.CLEARED, final_grid, 0).sum(axis=1).astype(np.int64)
        np.testing.assert_array_equal(state.seat[b, :, layout.RAW_SCORE], raw)
        scores = expected_round_scores(raw.tolist(), finisher, rules)
        np.testing.assert_array_equal(state.seat[b, :, layout.ROUND_SCORE], scores)
        penalised = scores[finisher] != raw[finisher]
        assert state.seat[b, finisher, layout.TIMES_PENALISED] == (
            before.seat[b, finisher, layout.TIMES_PENALISED] + penalised
        )
        totals = before.seat[b, :, layout.TOTAL] + scores
        np.testing.assert_array_equal(state.seat[b, :, layout.TOTAL], totals)
        finished = before.seat[b, :, layout.ROUNDS_FINISHED].copy()
        finished[finisher] += 1
        np.testing.assert_array_equal(state.seat[b, :, layout.ROUNDS_FINISHED], finished)
        rounds = int(state.game[b, layout.ROUND])
        assert rounds == before.game[b, layout.ROUND] + 1
        game_over = totals.max() >= rules.target_score or rounds == (rules.max_rounds or MAX_ROUNDS)
        assert bool(events & layout.EVENT_GAME_ENDED) == game_over
        assert bool(state.game_over[b]) == game_over
        if not game_over:
            assert state.game[b, layout.FINISHER] == -1
            assert state.game[b, layout.TURN] == 0
        self.rounds_checked += 1

    # ------------------------------------------------------------ sampled states

    def check_legality(self, b: int, mask, actions) -> None:
        """Try every action of game ``b`` on copies of the whole batch."""
        state = self.state
        num_actions = state.num_actions
        arrays = [array.copy() for array in state.arrays[:9]]
        others = np.arange(state.batch_size) != b
        for action in [*range(num_actions), num_actions, num_actions + 9, -2]:
            trial = state.copy()
            if 0 <= action < num_actions and mask[b, action]:
                alone = np.full(state.batch_size, -1, np.int64)
                alone[b] = action
                step(trial, alone)
                for after, original in zip(trial.arrays[:9], arrays, strict=True):
                    np.testing.assert_array_equal(after[others], original[others])
                assert trial.game[b, layout.DECISIONS] == state.game[b, layout.DECISIONS] + 1
            else:
                # an illegal action anywhere rejects the whole batch step
                batch_actions = actions.copy()
                batch_actions[b] = action
                with pytest.raises(IllegalActionError, match=f"game {b},"):
                    step(trial, batch_actions)
                for after, original in zip(trial.arrays[:9], arrays, strict=True):
                    np.testing.assert_array_equal(after, original)
        self.legality_checked += 1


def run_games(rules, games, seed, legality_every=40, max_steps=100_000):
    """Play ``games`` seeded random games to the end, checking after every step."""
    state = new_batch(rules, games)
    reset(state, np.random.default_rng(seed))
    policy = np.random.default_rng([seed, 1])
    checker = Checker(state, np.random.default_rng([seed, 2]))
    checker.check_cards()
    steps = 0
    while not state.all_over:
        mask = legal_action_mask(state)
        checker.check_live(mask)
        actions = random_actions(mask, state.game_over, policy)
        if steps % legality_every == 0:
            b = int(checker.policy.choice(np.flatnonzero(~state.game_over)))
            checker.check_legality(b, mask, actions)
        before = state.copy()
        events = step(state, actions)
        checker.check_cards()
        checker.check_events(before, actions, events)
        steps += 1
        assert steps < max_steps, "games did not end"
    return state, checker, steps


#: Configs that repeat the check at more seats or presets: slow (make test-fast keeps the rest).
_MORE_OF_THE_SAME = {"official-3p", "official-4p", "official-8p", "online-2p", "online-4p",
                     "4x4-no-columns-max-rounds-4p"}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow)
                                  if name in _MORE_OF_THE_SAME else name for name in CONFIGS])
def test_random_games__keep_every_invariant(name):
    rules, games = CONFIGS[name]
    state, checker, steps = run_games(rules, games, seed=sum(map(ord, name)))
    assert state.all_over
    assert not state.truncated.any()
    assert (state.game[:, layout.ROUND] >= 1).all()
    assert checker.rounds_checked == state.game[:, layout.ROUND].sum()
    assert checker.legality_checked >= steps // 40
    totals = state.total_scores
    if rules.max_rounds is None:
        assert (totals.max(axis=1) >= rules.target_score).all()
    else:
        assert (state.game[:, layout.ROUND] == rules.max_rounds).all()


def trajectory(rules, seeds, policy_seed, churn_global_rngs=False, restart=False):
    """Play random games; returns the per-step actions and events, and the final state."""
    state = new_batch(rules, len(seeds))
    reset(state, seeds)
    policy = np.random.default_rng(policy_seed)
    chaos = np.random.default_rng()  # fresh entropy: must not matter
    record = []
    next_seed = 1000
    for _ in range(600):
        if churn_global_rngs:
            random.seed(int(chaos.integers(2**32)))
            np.random.seed(int(chaos.integers(2**32)))  # noqa: NPY002
            random.random()
            np.random.random(7)  # noqa: NPY002
        over = state.game_over
        if restart and over.any():
            which = np.flatnonzero(over)
            reset(state, list(range(next_seed, next_seed + which.size)), which=which)
            next_seed += which.size
        actions = random_actions(legal_action_mask(state), state.game_over, policy)
        events = step(state, actions)
        record.append((actions.copy(), events.copy()))
    return record, state


def assert_same_play(first, second) -> None:
    (record_a, state_a), (record_b, state_b) = first, second
    for (actions_a, events_a), (actions_b, events_b) in zip(record_a, record_b, strict=True):
        np.testing.assert_array_equal(actions_a, actions_b)
        np.testing.assert_array_equal(events_a, events_b)
    for array_a, array_b in zip(state_a.arrays, state_b.arrays, strict=True):
        np.testing.assert_array_equal(array_a, array_b)


@pytest.mark.parametrize("rules", [SkyjoRules(num_players=3), load_rules("online")])
def test_random_games__same_seed_same_game_whatever_the_global_rngs(rules):
    seeds = list(range(40, 72))
    first = trajectory(rules, seeds, policy_seed=5, restart=True)
    second = trajectory(rules, seeds, policy_seed=5, churn_global_rngs=True, restart=True)
    assert_same_play(first, second)
    assert sum(int((events & layout.EVENT_GAME_ENDED).any()) for _, events in first[0]) > 0
    other = trajectory(rules, [seed + 1 for seed in seeds], policy_seed=5, restart=True)
    assert not np.array_equal(other[1].seat, first[1].seat)


def test_reset__a_seed_deals_the_same_game_in_any_batch_position():
    rules = load_rules("online", num_players=3)
    seeds = [3, 99, 12345, 7]
    forward, backward = new_batch(rules, 4), new_batch(rules, 6)
    reset(forward, seeds)
    reset(backward, [0] * 6)
    reset(backward, seeds, which=[5, 4, 3, 2])
    for position in range(len(seeds)):
        assert_same_game(forward, position, backward, 5 - position)
    assert not np.array_equal(forward.grid[0], forward.grid[1])


def test_reset__which_restarts_only_the_listed_games():
    rules = SkyjoRules()
    state = new_batch(rules, 6)
    reset(state, list(range(6)))
    policy = np.random.default_rng(0)
    for _ in range(60):
        step(state, random_actions(legal_action_mask(state), state.game_over, policy))
    before = state.copy()
    reset(state, [100, 101], which=[1, 4])
    fresh = new_batch(rules, 2)
    reset(fresh, [100, 101])
    for b in (0, 2, 3, 5):
        assert_same_game(state, b, before, b)
    assert_same_game(state, 1, fresh, 0)
    assert_same_game(state, 4, fresh, 1)


def assert_same_game(state_a, a: int, state_b, b: int) -> None:
    """Game ``a`` of one batch equals game ``b`` of another (pile entries beyond the pile
    sizes and the values of cleared slots mean nothing, so they are not compared)."""
    np.testing.assert_array_equal(state_a.draw_pile_of(a), state_b.draw_pile_of(b))
    np.testing.assert_array_equal(state_a.discard_pile_of(a), state_b.discard_pile_of(b))
    for name in ("slot_state", "game", "seat", "rng", "final_slot_state"):
        np.testing.assert_array_equal(getattr(state_a, name)[a], getattr(state_b, name)[b])
    for grid, slot_state in (("grid", "slot_state"), ("final_grid", "final_slot_state")):
        kept = getattr(state_a, slot_state)[a] != layout.CLEARED
        np.testing.assert_array_equal(
            getattr(state_a, grid)[a][kept], getattr(state_b, grid)[b][kept]
        )


def test_step__negative_ids_other_than_minus_one_are_illegal():
    state = new_batch(SkyjoRules(), 2)
    reset(state, [0, 1])
    before = state.copy()
    for bad in (-2, -27, -(2**40)):
        with pytest.raises(IllegalActionError, match="game 1,.*-1 leaves a game untouched"):
            step(state, np.array([-1, bad]))
    for after, original in zip(state.arrays, before.arrays, strict=True):
        np.testing.assert_array_equal(after, original)
    events = step(state, np.array([-1, 0]))
    assert events.tolist() == [0, 0]
    np.testing.assert_array_equal(state.game[0], before.game[0])
    assert state.slot_state[1, 0, 0] == layout.FACE_UP
