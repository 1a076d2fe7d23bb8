"""The search agent: rebuilt states re-encode exactly, legal and seeded choices, no leaks."""

from __future__ import annotations

import numpy as np
import pytest

from agents.cli import evaluate
from agents.registry import AgentSpecError, make_agent
from agents.search import (
    ObservationMismatchError,
    SearchAgent,
    SearchOptions,
    state_from_observations,
)
from agents.search.agent import choose
from skyjo_env.core import (
    SkyjoRules,
    legal_action_mask,
    load_rules,
    new_batch,
    reset,
    sample_information_set,
    step,
)
from skyjo_env.core.layout import DRAW_SIZE, HIDDEN
from skyjo_env.encoding import ObservationEncoder

#: Small and fast: 2 samples, short rollouts (the cut estimate is exercised too).
FAST = SearchOptions(samples=2, depth=12)


def _observations_of_played_games(rules: SkyjoRules, games: int, seed: int, every: int = 1):
    """Observations and masks of the seat to act, over full games played by ``ev``."""
    ev = make_agent("ev", rules, seed)
    encoder = ObservationEncoder(rules)
    state = new_batch(rules, games)
    reset(state, np.random.default_rng(seed))
    seen_obs, seen_masks, turn = [], [], 0
    while not state.all_over:
        running = ~state.game_over
        masks = legal_action_mask(state)
        observations = encoder.encode(state, state.current_player)
        if turn % every == 0:
            seen_obs.append(observations[running])
            seen_masks.append(masks[running])
        actions = np.full(games, -1, np.int64)
        actions[running] = ev.act(observations[running], masks[running])
        step(state, actions)
        turn += 1
    return np.concatenate(seen_obs), np.concatenate(seen_masks)


@pytest.mark.parametrize(
    "rules",
    [
        SkyjoRules(),
        load_rules("online", num_players=3),
        SkyjoRules(num_players=4, row_elimination=True, finisher_penalty_mode="flat",
                   finisher_flat_penalty=5),
        SkyjoRules(rows=2, cols=3, num_players=3, initial_reveals=1, max_turns_per_round=40),
    ],
    ids=["official-2p", "online-3p", "rows-flat-4p", "small-grid-turn-cap-3p"],
)
def test_state_from_observations__reencodes_exactly(rules):
    observations, _ = _observations_of_played_games(rules, games=6, seed=3)
    state = state_from_observations(rules, observations)
    encoder = ObservationEncoder(rules)
    np.testing.assert_array_equal(encoder.encode(state, 0), observations)
    # a whole-deck game: the sampler accepts every row and its samples re-encode too
    rng = np.random.default_rng(0)
    for b in range(0, len(observations), 97):
        samples = sample_information_set(state, b, 0, 2, rng)
        np.testing.assert_array_equal(encoder.encode(samples, 0), observations[[b, b]])


def test_state_from_observations__rejects_impossible_observations():
    rules = SkyjoRules()
    observations, _ = _observations_of_played_games(rules, games=1, seed=1, every=7)
    with pytest.raises(ObservationMismatchError, match="shape"):
        state_from_observations(rules, observations[:, :-1])
    bad = observations[:1].copy()
    unseen = ObservationEncoder(rules).describe()["unseen_counts"]
    bad[0, unseen] = 0.0  # nothing unseen, yet face-down cards and a draw pile remain
    with pytest.raises(ObservationMismatchError, match="observation 0"):
        state_from_observations(rules, bad)


def test_choose__keeps_the_base_choice_unless_clearly_better():
    masks = np.ones((3, 3), bool)
    masks[2, 0] = False
    values = np.zeros((3, 3, 4))
    values[0, 2] = [5, 5, 5, 6]          # clearly better than base action 0
    values[1, 2] = [9, -9, 9, -8]        # better on average, but noise
    values[2, 0] = [50, 50, 50, 50]      # illegal: never chosen
    values[2, 1] = values[2, 2] = 3      # tie between 1 and 2 -> lower id
    base = np.array([0, 0, 2])
    np.testing.assert_array_equal(choose(values, masks, base, 1.0), [2, 0, 2])
    np.testing.assert_array_equal(choose(values, masks, base, 0.0), [2, 2, 2])
    base_tie = np.array([0, 0, 1])
    np.testing.assert_array_equal(choose(values, masks, base_tie, 0.0)[2], 1)


def test_search__legal_and_deterministic_for_a_seed():
    rules = SkyjoRules(num_players=3)
    observations, masks = _observations_of_played_games(rules, games=2, seed=4, every=9)
    observations, masks = observations[:40], masks[:40]
    base = make_agent("ev", rules, 0)
    first = SearchAgent(base, rules, seed=5, options=FAST).act(observations, masks)
    again = SearchAgent(base, rules, seed=5, options=FAST).act(observations, masks)
    assert first.dtype == np.int64 and first.shape == (40,)
    assert masks[np.arange(40), first].all()
    np.testing.assert_array_equal(first, again)


def _hide_differently(state, b, rng):
    """Permute game ``b``'s face-down cards and draw pile among themselves."""
    hidden = np.argwhere(state.slot_state[b] == HIDDEN)
    draw = state.draw_pile[b, : state.game[b, DRAW_SIZE]]
    cards = np.concatenate([state.grid[b][tuple(hidden.T)], draw])
    rng.shuffle(cards)
    state.grid[b][tuple(hidden.T)] = cards[: len(hidden)]
    state.draw_pile[b, : state.game[b, DRAW_SIZE]] = cards[len(hidden):]


def test_search__decisions_ignore_hidden_cards():
    rules = SkyjoRules()
    encoder = ObservationEncoder(rules)
    ev = make_agent("ev", rules, 0)
    agents = [SearchAgent(make_agent("ev", rules, 0), rules, seed=2, options=FAST)
              for _ in range(2)]
    state = new_batch(rules, 4)
    reset(state, np.random.default_rng(8))
    rng = np.random.default_rng(9)
    checked = 0
    for _ in range(60):
        running = ~state.game_over
        masks = legal_action_mask(state)
        observations = encoder.encode(state, state.current_player)
        other = state.copy()
        for b in range(state.batch_size):
            _hide_differently(other, b, rng)
        assert (other.grid != state.grid).any() or (other.draw_pile != state.draw_pile).any()
        shuffled = encoder.encode(other, other.current_player)
        np.testing.assert_array_equal(shuffled[running], observations[running])
        np.testing.assert_array_equal(
            agents[0].act(shuffled[running], masks[running]),
            agents[1].act(observations[running], masks[running]),
        )
        checked += int(running.sum())
        actions = np.full(state.batch_size, -1, np.int64)
        actions[running] = ev.act(observations[running], masks[running])
        step(state, actions)
    assert checked > 100


def test_make_agent__search_specs():
    rules = SkyjoRules()
    agent = make_agent("search:ev", rules, 0)
    assert isinstance(agent, SearchAgent) and agent.name == "search:ev"
    assert agent.options == SearchOptions()
    tuned = make_agent("search(samples=3, depth=20,budget_ms=2.5,confidence_z=0):greedy", rules, 1)
    assert tuned.options == SearchOptions(samples=3, depth=20, budget_ms=2.5, confidence_z=0.0)
    assert tuned.base.name == "greedy"
    nested = make_agent("search(samples=1):search(samples=1,depth=2):random", rules, 2)
    assert nested.base.base.name == "random"


@pytest.mark.parametrize(
    "spec, words",
    [
        ("search:", "give a base agent spec"),
        ("search", "valid forms"),
        ("search(samples=2)", "give a base agent spec"),
        ("search(samples=2:ev", "closing ')'"),
        ("search(samples=0):ev", "samples must be an int >= 1"),
        ("search(samples=2.5):ev", "is not an int"),
        ("search(budget_ms=fast):ev", "is not a number"),
        ("search(budget_ms=nan):ev", "budget_ms must be a finite number"),
        ("search(width=3):ev", "unknown search option 'width'"),
        ("search(samples):ev", "is not key=value"),
        ("search(samples=2,samples=3):ev", "given twice"),
        ("search:nonsense", "unknown agent spec 'nonsense'"),
    ],
)
def test_make_agent__bad_search_specs_are_one_line_errors(spec, words):
    with pytest.raises(AgentSpecError) as error:
        make_agent(spec, SkyjoRules(), 0)
    assert words in str(error.value) and "\n" not in str(error.value)


def test_search__plays_through_evaluate(tmp_path, capsys):
    report = tmp_path / "report.json"
    code = evaluate.main(["--agents", "search(samples=2,depth=30):ev", "ev", "--games", "2",
                          "--seed", "0", "--json", str(report)])
    assert code == 0
    assert report.exists() and "search:ev" in capsys.readouterr().out
