"""Information-set sampling (`skyjo_env.core.determinize`): samples keep everything public,
conserve the deck, never depend on the hidden truth, deal the unseen cards uniformly, and
play on with the real engine."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from skyjo_env.core import kernels, layout
from skyjo_env.core.actions import Phase
from skyjo_env.core.determinize import held_card_is_unknown, sample_information_set
from skyjo_env.core.engine import (
    BatchState,
    legal_action_mask,
    new_batch,
    reset,
    step,
    unseen_counts,
)
from skyjo_env.core.rules import SkyjoRules, load_rules

CONFIGS = {
    "official-2p": SkyjoRules(),
    "official-3p": SkyjoRules(num_players=3),
    "official-4p": SkyjoRules(num_players=4),
    "online-rows-2p": load_rules("online"),
    "grid-2x2-3p": SkyjoRules(num_players=3, rows=2, cols=2, initial_reveals=1),
}

PLACE_PHASES = (int(Phase.PLACE_DRAWN), int(Phase.PLACE_DISCARD))


# ---------------------------------------------------------------- helpers


def _play_until(rules: SkyjoRules, predicate, seed: int, games: int = 64, limit: int = 3000):
    """Random legal play, one decision per game at a time, until ``predicate(state)``
    (bool (B,)) holds for some game; returns (state, that game)."""
    state = new_batch(rules, games)
    reset(state, seeds=np.random.default_rng(seed))
    policy = np.random.default_rng(seed + 1).integers(0, 2**63, size=games, dtype=np.uint64)
    events = np.zeros(games, np.int32)
    for _ in range(limit):
        hits = np.flatnonzero(predicate(state))
        if hits.size:
            return state, int(hits[0])
        kernels.random_legal_play(*state.arrays, 1, policy, events)
    raise AssertionError("no game reached the wanted state")


def _mid_round(state: BatchState) -> np.ndarray:
    # a few turns in, so that discard history and face-up cards exist
    game = state.game
    return (game[:, layout.PHASE] == int(Phase.CHOOSE_SOURCE)) & (game[:, layout.DISCARD_SIZE] > 4)


def _opponent_drew(state: BatchState) -> np.ndarray:
    game = state.game
    return (game[:, layout.PHASE] == int(Phase.PLACE_DRAWN)) & (game[:, layout.DISCARD_SIZE] > 3)


def _final_lap(state: BatchState) -> np.ndarray:
    game = state.game
    return (game[:, layout.FINISHER] >= 0) & (game[:, layout.PHASE] != int(Phase.GAME_OVER))


def _empty_draw_pile(state: BatchState, b: int) -> BatchState:
    """A copy of ``state`` where game ``b``'s draw pile has all gone under its discard pile:
    the next draw reshuffles (the deck is still conserved)."""
    state = state.copy()
    draw = state.draw_pile_of(b).copy()
    discard = state.discard_pile_of(b).copy()
    merged = np.concatenate([draw, discard])
    state.discard_pile[b, : merged.size] = merged
    state.game[b, layout.DISCARD_SIZE] = merged.size
    state.game[b, layout.DRAW_SIZE] = 0
    return state


def _cards_in_play(state: BatchState, k: int) -> np.ndarray:
    """Every card of game ``k`` (grids, piles, held card), sorted."""
    parts = [
        state.grid[k][state.slot_state[k] != layout.CLEARED],
        state.draw_pile_of(k),
        state.discard_pile_of(k),
    ]
    if state.game[k, layout.PHASE] in PLACE_PHASES:
        parts.append(np.array([state.game[k, layout.HELD]], np.int16))
    return np.sort(np.concatenate(parts))


def _assert_conserved(state: BatchState) -> None:
    for k in range(state.batch_size):
        np.testing.assert_array_equal(_cards_in_play(state, k), state.deck, err_msg=f"game {k}")


def _assert_public_kept(true: BatchState, b: int, samples: BatchState, observer: int) -> None:
    visible = true.slot_state[b] != layout.HIDDEN
    game_fields = np.ones(true.game.shape[1], bool)
    if held_card_is_unknown(true, b, observer):
        game_fields[layout.HELD] = False
    for k in range(samples.batch_size):
        np.testing.assert_array_equal(samples.slot_state[k], true.slot_state[b])
        np.testing.assert_array_equal(samples.grid[k][visible], true.grid[b][visible])
        np.testing.assert_array_equal(samples.discard_pile_of(k), true.discard_pile_of(b))
        np.testing.assert_array_equal(samples.game[k, game_fields], true.game[b, game_fields])
        np.testing.assert_array_equal(samples.seat[k], true.seat[b])
        np.testing.assert_array_equal(samples.final_grid[k], true.final_grid[b])
        np.testing.assert_array_equal(samples.final_slot_state[k], true.final_slot_state[b])
    # each sample plays on with its own fresh stream, never the true game's
    assert true.rng[b] not in samples.rng
    assert np.unique(samples.rng).size == samples.batch_size


def _permute_hidden(state: BatchState, b: int, observer: int, seed: int) -> BatchState:
    """A copy of ``state`` whose unknown cards (face-down slots, draw pile, a held card
    the observer cannot know) of game ``b`` are shuffled among their positions."""
    state = state.copy()
    hidden = state.slot_state[b] == layout.HIDDEN
    held = held_card_is_unknown(state, b, observer)
    draw_size = state.game[b, layout.DRAW_SIZE]
    cards = np.concatenate(
        [
            state.grid[b][hidden],
            state.draw_pile_of(b),
            state.game[b, layout.HELD : layout.HELD + int(held)],
        ]
    ).astype(np.int16)
    permuted = np.random.default_rng(seed).permutation(cards)
    assert not np.array_equal(permuted, cards)  # the test must change the truth
    state.grid[b][hidden] = permuted[: hidden.sum()]
    state.draw_pile[b, :draw_size] = permuted[hidden.sum() : hidden.sum() + draw_size]
    if held:
        state.game[b, layout.HELD] = permuted[-1]
    return state


def _play_random(state: BatchState, decisions: int, seed: int) -> np.ndarray:
    """Random legal decisions through the checked `step`, then the compiled loop; returns
    the OR of every event (int32 (B,))."""
    rng = np.random.default_rng(seed)
    seen = np.zeros(state.batch_size, np.int32)
    for _ in range(20):  # `step` re-checks legality of every sampled state's moves
        mask = legal_action_mask(state)
        actions = np.array([rng.choice(np.flatnonzero(row)) if row.any() else -1 for row in mask])
        seen |= step(state, actions)
    policy = rng.integers(0, 2**63, size=state.batch_size, dtype=np.uint64)
    kernels.random_legal_play(*state.arrays, decisions, policy, seen)
    return seen


# ---------------------------------------------------------------- consistency


@pytest.mark.parametrize("name", CONFIGS)
def test_sample_information_set__keeps_public_and_conserves_deck(name):
    rules = CONFIGS[name]
    state, b = _play_until(rules, _mid_round, seed=3)
    observer = (int(state.game[b, layout.CURRENT]) + 1) % rules.num_players
    samples = sample_information_set(state, b, observer, 32, np.random.default_rng(0))
    _assert_public_kept(state, b, samples, observer)
    _assert_conserved(samples)
    # the unknown cards really are redealt
    hidden = state.slot_state[b] == layout.HIDDEN
    assert any(
        not np.array_equal(samples.grid[k][hidden], state.grid[b][hidden]) for k in range(32)
    )


@pytest.mark.parametrize("name", ["official-2p", "official-4p", "online-rows-2p"])
def test_sample_information_set__same_samples_when_hidden_cards_permuted(name):
    rules = CONFIGS[name]
    state, b = _play_until(rules, _opponent_drew, seed=5)
    observer = (int(state.game[b, layout.CURRENT]) + 1) % rules.num_players
    permuted = _permute_hidden(state, b, observer, seed=11)
    first = sample_information_set(state, b, observer, 16, np.random.default_rng(7))
    second = sample_information_set(permuted, b, observer, 16, np.random.default_rng(7))
    for ours, theirs in zip(first.arrays, second.arrays, strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_sample_information_set__hidden_slots_follow_unseen_counts():
    rules = CONFIGS["official-2p"]
    state, b = _play_until(rules, _opponent_drew, seed=9)
    observer = (int(state.game[b, layout.CURRENT]) + 1) % rules.num_players
    samples = sample_information_set(state, b, observer, 20_000, np.random.default_rng(123))
    unseen = unseen_counts(state, observer)[b]
    expected = unseen / unseen.sum() * samples.batch_size
    own_slot = int(np.flatnonzero(state.slot_state[b, observer] == layout.HIDDEN)[0])
    drawer = int(state.game[b, layout.CURRENT])
    other_slot = int(np.flatnonzero(state.slot_state[b, drawer] == layout.HIDDEN)[-1])
    top = state.game[b, layout.DRAW_SIZE] - 1
    positions = {
        "own face-down slot": samples.grid[:, observer, own_slot],
        "opponent face-down slot": samples.grid[:, drawer, other_slot],
        "draw pile top": samples.draw_pile[:, top],
        "opponent's drawn card": samples.game[:, layout.HELD],
    }
    lookup = {int(v): i for i, v in enumerate(rules.card_values)}
    for where, values in positions.items():
        observed = np.bincount([lookup[int(v)] for v in values], minlength=unseen.size)
        assert observed[unseen == 0].sum() == 0, where
        present = unseen > 0
        p_value = stats.chisquare(observed[present], expected[present]).pvalue
        assert p_value > 1e-3, f"{where}: p = {p_value:.2g}"


# ---------------------------------------------------------------- held card


def test_sample_information_set__observer_keeps_own_drawn_card():
    rules = CONFIGS["official-3p"]
    state, b = _play_until(rules, _opponent_drew, seed=13)
    drawer = int(state.game[b, layout.CURRENT])
    own = sample_information_set(state, b, drawer, 200, np.random.default_rng(1))
    assert (own.game[:, layout.HELD] == state.game[b, layout.HELD]).all()
    _assert_conserved(own)
    other = sample_information_set(state, b, (drawer + 1) % 3, 200, np.random.default_rng(1))
    assert np.unique(other.game[:, layout.HELD]).size > 3
    _assert_conserved(other)


def test_sample_information_set__card_taken_from_discard_pile_is_public():
    rules = CONFIGS["official-2p"]
    state, b = _play_until(
        rules, lambda s: s.game[:, layout.PHASE] == int(Phase.PLACE_DISCARD), seed=17
    )
    observer = (int(state.game[b, layout.CURRENT]) + 1) % rules.num_players
    samples = sample_information_set(state, b, observer, 100, np.random.default_rng(2))
    assert (samples.game[:, layout.HELD] == state.game[b, layout.HELD]).all()
    _assert_conserved(samples)


# ---------------------------------------------------------------- playable


@pytest.mark.parametrize("name", CONFIGS)
def test_sample_information_set__samples_play_on_through_round_end(name):
    rules = CONFIGS[name]
    state, b = _play_until(rules, _final_lap, seed=19)
    observer = int(state.game[b, layout.CURRENT])
    samples = sample_information_set(state, b, observer, 48, np.random.default_rng(3))
    _assert_public_kept(state, b, samples, observer)
    events = _play_random(samples, decisions=400, seed=4)
    assert (events & layout.EVENT_ROUND_ENDED).all()
    _assert_conserved(samples)


@pytest.mark.parametrize("name", ["official-2p", "online-rows-2p", "grid-2x2-3p"])
def test_sample_information_set__empty_draw_pile_reshuffles_per_sample(name):
    rules = CONFIGS[name]
    state, b = _play_until(rules, _mid_round, seed=23)
    state = _empty_draw_pile(state, b)
    observer = int(state.game[b, layout.CURRENT])
    samples = sample_information_set(state, b, observer, 64, np.random.default_rng(5))
    _assert_public_kept(state, b, samples, observer)
    draw = np.full(64, rules.num_slots, np.int64)  # DRAW is action S: everyone reshuffles
    step(samples, draw)
    # fresh streams: the reshuffled piles (hence the drawn cards) differ between samples
    assert np.unique(samples.game[:, layout.HELD]).size > 1
    _assert_conserved(samples)
    _play_random(samples, decisions=200, seed=6)
    _assert_conserved(samples)


# ---------------------------------------------------------------- out and inputs


def test_sample_information_set__writes_into_given_out_identically():
    rules = CONFIGS["official-2p"]
    state, b = _play_until(rules, _opponent_drew, seed=29)
    fresh = sample_information_set(state, b, 0, 8, np.random.default_rng(9))
    out = new_batch(rules, 8)
    # stale contents from another sample must be overwritten entirely
    sample_information_set(state, b, 1, 8, np.random.default_rng(1), out=out)
    returned = sample_information_set(state, b, 0, 8, np.random.default_rng(9), out=out)
    assert returned is out
    for ours, theirs in zip(fresh.arrays, out.arrays, strict=True):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"game": 4}, "game must be in 0..3"),
        ({"game": True}, "game must be an int"),
        ({"observer": 2}, "observer must be in 0..1"),
        ({"observer": -1}, "observer must be in 0..1"),
        ({"count": 0}, "count must be >= 1"),
        ({"count": 2.0}, "count must be an int"),
        ({"rng": 0}, "rng must be a np.random.Generator"),
        ({"out": "batch"}, "out must be a BatchState"),
    ],
)
def test_sample_information_set__bad_argument_raises(changes, message):
    state = new_batch(SkyjoRules(), 4)
    reset(state, seeds=[1, 2, 3, 4])
    arguments = {"game": 0, "observer": 0, "count": 2, "rng": np.random.default_rng(0)}
    arguments.update(changes)
    with pytest.raises(ValueError, match=message):
        sample_information_set(state, **arguments)


def test_sample_information_set__bad_out_raises():
    state = new_batch(SkyjoRules(), 4)
    reset(state, seeds=[1, 2, 3, 4])
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="same rules"):
        sample_information_set(state, 0, 0, 4, rng, out=new_batch(SkyjoRules(num_players=3), 4))
    with pytest.raises(ValueError, match="holds 3 games but count is 4"):
        sample_information_set(state, 0, 0, 4, rng, out=new_batch(SkyjoRules(), 3))
    with pytest.raises(ValueError, match="must not share arrays"):
        sample_information_set(state, 0, 0, 4, rng, out=state)


def test_sample_information_set__game_never_reset_raises():
    state = new_batch(SkyjoRules(), 2)
    with pytest.raises(ValueError, match="game 1 does not hold the rules' deck"):
        sample_information_set(state, 1, 0, 2, np.random.default_rng(0))
