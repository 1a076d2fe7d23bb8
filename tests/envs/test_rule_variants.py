"""Rule variants through the envs (issue #12.5): every finisher-penalty mode and both
draw-pile reshuffles, played through the AEC env and the VecEnv, and learner-seat
uniformity in the VecEnv. Each test asserts that the event it is about happened."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from skyjo_env import RandomAgent, SkyjoVecEnv, raw_env
from skyjo_env.core import layout
from skyjo_env.core.actions import Phase
from skyjo_env.core.rules import SkyjoRules
from skyjo_env.protocol import sample_legal

from .helpers import expected_game_rewards, expected_round_rewards, unconserved_games

PENALTY_MODES = ["multiplier", "flat", "flat_then_multiplier", "multiplier_then_flat", "none"]
MULTIPLIER, FLAT = 3, 7

# a 30-card deck: 2 grids of 12 and the first discard leave 5 cards to draw
TIGHT_DECK = {value: 3 for value in range(-2, 8)}


def penalty_rules(mode: str, **changes) -> SkyjoRules:
    return SkyjoRules(
        num_players=2,
        finisher_penalty_mode=mode,
        finisher_multiplier=MULTIPLIER,
        finisher_flat_penalty=FLAT,
        target_score=200,
        **changes,
    )


def expected_scores(raw: np.ndarray, finisher: int, rules: SkyjoRules) -> tuple[np.ndarray, bool]:
    """Round scores from raw scores by RULES.md §11, written out independently of the
    engine; and whether the penalty condition held (whatever the mode then does)."""
    scores = raw.astype(np.int64)
    s = int(raw[finisher])
    others = np.delete(raw, finisher)
    as_good = (others <= s) if rules.finisher_penalty_condition == "other_le" else (others < s)
    if not as_good.any() or (rules.finisher_penalty_only_if_positive and s <= 0):
        return scores, False
    m, f = rules.finisher_multiplier, rules.finisher_flat_penalty
    scores[finisher] = {
        "multiplier": s * m,
        "flat": s + f,
        "flat_then_multiplier": (s + f) * m,
        "multiplier_then_flat": s * m + f,
        "none": s,
    }[rules.finisher_penalty_mode]
    return scores, True


def check_round_end(before: np.ndarray, after: np.ndarray, rules: SkyjoRules) -> tuple[np.ndarray, bool]:
    """One game's seat counters (P, F) before and after a round ended: the engine's round
    scores and totals follow `expected_scores`. Returns those scores and whether the
    penalty condition held."""
    finished = np.flatnonzero(after[:, layout.ROUNDS_FINISHED] != before[:, layout.ROUNDS_FINISHED])
    assert finished.size == 1, "a scored round has exactly one finisher"
    scores, condition = expected_scores(after[:, layout.RAW_SCORE], int(finished[0]), rules)
    np.testing.assert_array_equal(after[:, layout.ROUND_SCORE], scores)
    np.testing.assert_array_equal(after[:, layout.TOTAL] - before[:, layout.TOTAL], scores)
    return scores, condition


def assert_conserved(state) -> None:
    bad = unconserved_games(state)
    assert bad.size == 0, f"cards not conserved in games {bad}"


class RoundLog:
    """Counts rounds, those where the penalty condition held, and those it changed."""

    def __init__(self):
        self.rounds = self.condition = self.changed = 0

    def add(self, scores: np.ndarray, condition: bool, raw: np.ndarray) -> None:
        self.rounds += 1
        self.condition += condition
        self.changed += bool((scores != raw).any())

    def assert_mode_seen(self, mode: str) -> None:
        assert self.rounds >= 5
        assert self.condition >= 1, "no round met the penalty condition"
        if mode == "none":
            assert self.changed == 0
        else:
            assert self.changed == self.condition


def play_aec(rules: SkyjoRules, seeds: range, on_step=None) -> RoundLog:
    """Random legal games through the raw AEC env; every round end's rewards are checked
    against the reward definition applied to `expected_scores`."""
    game = raw_env(rules)
    rng = np.random.default_rng(0)
    log = RoundLog()
    for seed in seeds:
        game.reset(seed=seed)
        state = game.batch
        while not any(game.terminations.values()) and not any(game.truncations.values()):
            mask = game.observe(game.agent_selection)["action_mask"] == 1
            action = int(sample_legal(mask[None], rng)[0])
            before_seat, before_game = state.seat[0].copy(), state.game[0].copy()
            game.step(action)
            if on_step is not None:
                on_step(state, before_game, action)
            if state.game[0, layout.ROUND] == before_game[layout.ROUND]:
                continue
            scores, condition = check_round_end(before_seat, state.seat[0], rules)
            log.add(scores, condition, state.seat[0, :, layout.RAW_SCORE])
            expected = expected_round_rewards(scores)
            if state.game[0, layout.PHASE] == Phase.GAME_OVER:
                expected = expected + expected_game_rewards(state.seat[0, :, layout.TOTAL])
            rewards = [game.rewards[agent] for agent in game.possible_agents]
            np.testing.assert_allclose(rewards, expected, atol=1e-12)
    return log


def play_vec(rules: SkyjoRules, steps: int, num_envs: int = 16, seed: int = 0):
    """Random legal play through the VecEnv; checks card conservation after every step and,
    for every round that ended inside a game, its scores and the learner's reward. Returns
    the `RoundLog` and the number of mid-round draw-pile refills (reshuffles) seen."""
    venv = SkyjoVecEnv(num_envs, rules=rules, opponents=RandomAgent(1), seed=seed)
    venv.reset()
    state = venv.games.batch
    rng = np.random.default_rng(seed)
    log, reshuffles, game_ends = RoundLog(), 0, 0
    for _ in range(steps):
        before_seat, before_game = state.seat.copy(), state.game.copy()
        learner = venv.learner_seat
        _, rewards, dones, infos = venv.step(sample_legal(venv.action_masks(), rng))
        assert_conserved(state)
        going_on = ~dones & (state.game[:, layout.ROUND] == before_game[:, layout.ROUND])
        grew = state.game[:, layout.DRAW_SIZE] > before_game[:, layout.DRAW_SIZE]
        reshuffles += int((going_on & grew).sum())
        new_round = state.game[:, layout.ROUND] != before_game[:, layout.ROUND]
        for b in np.flatnonzero(~dones & new_round):
            scores, condition = check_round_end(before_seat[b], state.seat[b], rules)
            log.add(scores, condition, state.seat[b, :, layout.RAW_SCORE])
            expected = expected_round_rewards(scores)[learner[b]]
            assert rewards[b] == pytest.approx(expected, abs=1e-6)
        for b in np.flatnonzero(dones):
            end = infos[b]["episode_end"]
            game_ends += 1
            seat = end["learner_seat"]
            expected = (
                expected_round_rewards(end["round_scores"])[seat]
                + expected_game_rewards(end["total_scores"])[seat]
            )
            assert rewards[b] == pytest.approx(expected, abs=1e-6)
    assert game_ends >= 1
    return log, reshuffles


@pytest.mark.parametrize("mode", PENALTY_MODES)
def test_aec__finisher_penalty_mode_sets_the_round_scores_and_rewards(mode):
    play_aec(penalty_rules(mode), range(3)).assert_mode_seen(mode)


@pytest.mark.parametrize("mode", PENALTY_MODES)
def test_vec_env__finisher_penalty_mode_sets_the_round_scores_and_rewards(mode):
    log, _ = play_vec(penalty_rules(mode), steps=300)
    log.assert_mode_seen(mode)


def test_aec__penalty_condition_other_lt_and_non_positive_scores_through_the_env():
    rules = penalty_rules(
        "flat_then_multiplier",
        finisher_penalty_condition="other_lt",
        finisher_penalty_only_if_positive=False,
    )
    play_aec(rules, range(3)).assert_mode_seen("flat_then_multiplier")


@pytest.mark.parametrize("reshuffle", ["reshuffle_keep_top", "reshuffle_all"])
def test_aec__empty_draw_pile_is_refilled_by_the_rule_keeping_every_card(reshuffle):
    rules = SkyjoRules(num_players=2, deck=TIGHT_DECK, empty_draw_pile=reshuffle, target_score=40)
    draw = rules.num_slots
    seen = {"refills": 0, "new_top": 0}

    def on_step(state, before, action):
        assert_conserved(state)
        refilled = (
            before[layout.PHASE] == Phase.CHOOSE_SOURCE
            and action == draw
            and before[layout.DRAW_SIZE] == 0
        )
        if not refilled:
            return
        seen["refills"] += 1
        old_top = state.discard_pile[0, before[layout.DISCARD_SIZE] - 1]
        # keep_top: the old top stays, the rest (size - 1) is the new pile, one is drawn;
        # all: everything is shuffled, a new top is flipped, one is drawn
        assert state.game[0, layout.DISCARD_SIZE] == 1
        assert state.game[0, layout.DRAW_SIZE] == before[layout.DISCARD_SIZE] - 2
        if reshuffle == "reshuffle_keep_top":
            assert state.discard_pile[0, 0] == old_top
        seen["new_top"] += int(state.discard_pile[0, 0] != old_top)

    log = play_aec(rules, range(2), on_step)
    assert log.rounds >= 2
    assert seen["refills"] >= 5
    if reshuffle == "reshuffle_all":
        assert seen["new_top"] >= 1


@pytest.mark.parametrize("reshuffle", ["reshuffle_keep_top", "reshuffle_all"])
def test_vec_env__empty_draw_pile_refills_keep_every_card(reshuffle):
    rules = SkyjoRules(num_players=2, deck=TIGHT_DECK, empty_draw_pile=reshuffle, target_score=40)
    log, reshuffles = play_vec(rules, steps=100)
    assert reshuffles >= 5
    assert log.rounds >= 1


def test_vec_env__learner_seat_is_uniform_over_seats():
    players, num_envs = 4, 128
    venv = SkyjoVecEnv(num_envs, num_players=players, episode="round", seed=11)
    rng = np.random.default_rng(0)
    at_reset, at_restart = [], []
    for _ in range(10):
        venv.reset()
        at_reset.append(venv.learner_seat)
    for _ in range(150):
        _, _, dones, _ = venv.step(sample_legal(venv.action_masks(), rng))
        at_restart.append(venv.learner_seat[dones])
    for seats in (np.concatenate(at_reset), np.concatenate(at_restart)):
        counts = np.bincount(seats, minlength=players)
        assert seats.size >= 300
        # chi-square goodness of fit to 1/P each; fixed seeds, so this never flickers
        assert stats.chisquare(counts).pvalue > 1e-3, counts
