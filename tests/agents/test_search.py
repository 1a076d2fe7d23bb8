"""The search agent: rebuilt states re-encode exactly, legal and seeded choices, no leaks."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hidden_cards import assert_decisions_ignore_hidden_cards, redeal_hidden

from agents.cli import evaluate
from agents.registry import AgentSpecError, make_agent, search_settings
from agents.search import (
    ObservationMismatchError,
    SearchAgent,
    SearchOptionError,
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
from skyjo_env.core.actions import Phase
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


#: Tiny critic searches over a network (unnamed options would keep `PPO_SEARCH`'s).
_TINY_CRITIC = "search(samples=2,depth=2,leaf=critic,top_actions=3,confidence_z=2,verify_samples=0)"


@pytest.mark.parametrize(
    "spec", [None, f"{_TINY_CRITIC}:ppo:models/ppo_2p.zip",
             f"{_TINY_CRITIC}:ppo:models/ppo_2p_stage3.zip",
             "search(samples=4,depth=4,luck=adjusted):ev",
             "search(samples=4,depth=4,lookahead=two):ev",
             f"{_TINY_CRITIC[:-1]},lookahead=two):ppo:models/ppo_2p.zip",
             "search(samples=4,depth=4,opponents=greedy,lookahead=two,luck=adjusted):ev",
             f"{_TINY_CRITIC[:-1]},critic=models/ppo_2p_stage3.zip,opponents=ev):ppo:models/ppo_2p.zip"],
    ids=["margin-over-ev", "critic-over-ppo", "critic-over-ppo-feeding", "luck-adjusted-over-ev",
         "lookahead-two-over-ev", "lookahead-two-critic-over-ppo",
         "opponents-lookahead-two-luck-over-ev", "critic-path-opponents-ev-over-ppo"],
)
def test_search__decisions_ignore_hidden_cards(spec):
    """At every step of 4 games played by ev, a twin game with every face-down card and
    the draw pile dealt again (`redeal_hidden`): two searches built alike, one per twin,
    decide the same (their samples come from what the seat sees, not from the deal)."""
    rules = SkyjoRules()
    encoder = ObservationEncoder(rules)
    ev = make_agent("ev", rules, 0)
    if spec is None:
        pair = tuple(SearchAgent(make_agent("ev", rules, 0), rules, seed=2, options=FAST)
                     for _ in range(2))
    else:
        pair = tuple(make_agent(spec, rules, 2) for _ in range(2))
    state = new_batch(rules, 4)
    reset(state, np.random.default_rng(8))
    rng = np.random.default_rng(9)
    compared, steps = 0, 60 if spec is None else 25  # the PPO search is slower per step
    for _ in range(steps):
        twin = redeal_hidden(state, rng)
        compared += assert_decisions_ignore_hidden_cards(pair, state, twin, encoder)
        running = ~state.game_over
        actions = np.full(state.batch_size, -1, np.int64)
        actions[running] = ev.act(encoder.encode(state, state.current_player)[running],
                                  legal_action_mask(state)[running])
        step(state, actions)
    assert compared > 3 * steps


def test_make_agent__search_specs():
    rules = SkyjoRules()
    agent = make_agent("search:ev", rules, 0)
    assert isinstance(agent, SearchAgent) and agent.name == "search:ev"
    assert agent.options == SearchOptions()
    tuned = make_agent("search(samples=3, depth=20,budget_ms=2.5,confidence_z=0):greedy", rules, 1)
    assert tuned.options == SearchOptions(samples=3, depth=20, budget_ms=2.5, confidence_z=0.0)
    assert tuned.base.name == "greedy"
    verified = make_agent("search(samples=3,verify_samples=8):ev", rules, 1)
    assert verified.options == SearchOptions(samples=3, verify_samples=8)


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
        ("search(leaf=tree):ev", "leaf must be one of margin, critic, got 'tree'"),
        ("search(leaf=critic):ev", "leaf=critic needs a 'ppo:PATH' base agent"),
        ("search(top_actions=1):ev", "top_actions must be an int >= 2, got 1"),
        ("search(top_actions=few):ev", "top_actions='few' is not an int or 'all'"),
        ("search(top_actions=3):greedy", "top_actions needs a 'ppo:PATH' base agent"),
        ("search(verify_samples=-1):ev", "verify_samples must be an int >= 0, got -1"),
        ("search(rollout_precision=half):ev",
         "rollout_precision must be one of float32, bfloat16, got 'half'"),
        ("search(rollout_precision=bfloat16):ev",
         "rollout_precision=bfloat16 needs a 'ppo:PATH' base agent"),
        ("search(luck=lucky):ev", "luck must be one of raw, adjusted, got 'lucky'"),
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


# ---------------------------------------------------------------- critic leaves

SHIPPED_2P = "models/ppo_2p.zip"


@pytest.fixture(scope="module")
def ppo_2p():
    from agents.ppo import load_ppo_agent

    return load_ppo_agent(SHIPPED_2P, SkyjoRules(), seed=0)


def _play_until(state, agent, encoder, done):
    """Step ``state`` with ``agent`` in every seat until ``done(events)`` is all True."""
    while True:
        running = ~state.game_over
        masks = legal_action_mask(state)
        observations = encoder.encode(state, state.current_player)
        actions = np.full(state.batch_size, -1, np.int64)
        actions[running] = agent.act(observations[running], masks[running])
        events = step(state, actions)
        if done(events):
            return events


def test_critic_value__cut_leaves_are_critic_plus_potential(ppo_2p):
    import torch

    from agents.search.values import CriticValue
    from skyjo_env.encoding import ObservationLayout
    from skyjo_env.rewards import grid_potential

    rules = SkyjoRules()
    encoder = ObservationEncoder(rules)
    state = new_batch(rules, 3)
    reset(state, np.random.default_rng(5))
    _play_until(state, ppo_2p, encoder, lambda events: True)  # one decision each
    value = CriticValue(ppo_2p.policy, rules, shaping_weight=1.0)
    got = value(state, np.zeros(3, bool))
    seat_0 = encoder.encode(state, np.zeros(3, np.int64))
    with torch.no_grad():
        direct = ppo_2p.policy.predict_values(torch.as_tensor(seat_0))[:, 0].double().numpy()
    expected = direct + grid_potential(seat_0, ObservationLayout(rules))
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    # a known grid: all 12 face-down at the deck mean 760/150 -> Phi = -12 * 760/150 / 100
    fresh = new_batch(rules, 1)
    reset(fresh, np.random.default_rng(0))
    observation = encoder.encode(fresh, np.zeros(1, np.int64))
    no_shaping = CriticValue(ppo_2p.policy, rules, shaping_weight=0.0)
    np.testing.assert_allclose(
        value.values_of_observations(observation) - no_shaping.values_of_observations(observation),
        [-12 * 760 / 150 / 100], rtol=1e-6,
    )


def test_critic_value__round_and_game_ends_add_the_realised_reward(ppo_2p):
    from agents.search.values import CriticValue
    from skyjo_env.core import layout
    from skyjo_env.core.actions import Phase

    rules = SkyjoRules()
    encoder = ObservationEncoder(rules)
    value = CriticValue(ppo_2p.policy, rules, shaping_weight=1.0)
    state = new_batch(rules, 1)
    reset(state, np.random.default_rng(3))
    _play_until(state, ppo_2p, encoder, lambda events: (events & layout.EVENT_ROUND_ENDED).any())
    assert state.phase[0] == Phase.INITIAL_REVEAL  # the next round is dealt
    round_scores = state.seat[0, :, layout.ROUND_SCORE]
    margin = float(round_scores[1] - round_scores[0]) / 100
    next_round = value(state, np.zeros(1, bool))[0]  # the critic at the new deal
    np.testing.assert_allclose(value(state, np.ones(1, bool)), [margin + next_round])
    over = state.copy()  # the same round end, made the game's end
    over.game[0, layout.PHASE] = Phase.GAME_OVER
    over.seat[0, :, layout.TOTAL] = [40, 100]  # seat 0 wins: +1 on top of the round margin
    np.testing.assert_allclose(value(over, np.ones(1, bool)), [margin + 1.0])
    # a critic trained with win_bonus 2 learned the placement three times over
    bonused = CriticValue(ppo_2p.policy, rules, shaping_weight=1.0, win_bonus=2.0)
    np.testing.assert_allclose(bonused(over, np.ones(1, bool)), [margin + 3.0])
    over.seat[0, :, layout.TOTAL] = [100, 40]  # seat 0 loses
    np.testing.assert_allclose(bonused(over, np.ones(1, bool)), [margin - 3.0])
    np.testing.assert_allclose(bonused(state, np.ones(1, bool)), [margin + next_round])


def test_critic_value__rejects_a_policy_without_a_value_head():
    from agents.search.values import CriticValue, CriticValueError

    with pytest.raises(CriticValueError, match="value head"):
        CriticValue(object(), SkyjoRules())


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_critic_value__rejects_a_bad_win_bonus(ppo_2p, bad):
    from agents.search.values import CriticValue, CriticValueError

    with pytest.raises(CriticValueError, match="win_bonus must be a finite number >= 0"):
        CriticValue(ppo_2p.policy, SkyjoRules(), win_bonus=bad)


class _SpyValue:
    """A value function recording the seat to act and the round-ended flags it saw."""

    own_turn_leaves = True

    def __init__(self):
        self.cut_seats = []

    def __call__(self, state, round_ended):
        self.cut_seats.append(state.current_player[~round_ended])
        return np.zeros(state.batch_size)


class _NoiseValue:
    """Pure noise: no action is better than another, so every switch is a false one."""

    def __init__(self):
        self.rng = np.random.default_rng(0)
        self.batch_sizes = []

    def __call__(self, state, round_ended):
        self.batch_sizes.append(state.batch_size)
        return self.rng.normal(size=state.batch_size)


def test_search__verify_samples_retests_switches_on_fresh_samples_of_two_actions():
    rules = SkyjoRules()
    observations, masks = _observations_of_played_games(rules, games=2, seed=3, every=7)
    phases = ObservationEncoder(rules).decode(observations)["phase"]
    keep = (masks.sum(axis=1) > 1) & (phases != Phase.INITIAL_REVEAL)  # the searched rows
    observations, masks = observations[keep][:60], masks[keep][:60]
    base = make_agent("ev", rules, 0)
    base_actions = base.act(observations, masks)
    first_only = SearchAgent(base, rules, seed=4, value_fn=_NoiseValue(),
                             options=SearchOptions(samples=4, depth=1, confidence_z=0))
    switched = first_only.act(observations, masks) != base_actions
    noise = _NoiseValue()
    verified = SearchAgent(base, rules, seed=4, value_fn=noise,
                           options=SearchOptions(samples=4, depth=1, confidence_z=0,
                                                 verify_samples=6))
    kept = verified.act(observations, masks) != base_actions
    # the same first stage (same seed), then only its switches are retested: the base
    # action and the challenger, on 6 fresh samples each
    assert noise.batch_sizes == [4 * int(masks.sum()), 2 * 6 * int(switched.sum())]
    assert not (kept & ~switched).any()
    # noise beats the base on fresh samples about half the time, not every time
    assert 0 < kept.sum() < 0.8 * switched.sum()


def test_search__own_turn_leaves_are_cut_where_seat_0_acts():
    rules = SkyjoRules()
    observations, masks = _observations_of_played_games(rules, games=1, seed=6, every=11)
    spy = _SpyValue()
    agent = SearchAgent(make_agent("ev", rules, 0), rules, seed=1,
                        options=SearchOptions(samples=2, depth=3), value_fn=spy)
    agent.act(observations[:8], masks[:8])
    cut = np.concatenate(spy.cut_seats)
    assert cut.size > 0 and (cut == 0).all()


def test_search__critic_leaf_without_a_value_fn_is_an_error():
    with pytest.raises(SearchOptionError, match="leaf=critic needs value_fn"):
        SearchAgent(make_agent("ev", SkyjoRules(), 0), SkyjoRules(), seed=0,
                    options=SearchOptions(leaf="critic"))


def test_search__top_actions_keeps_the_base_choice_and_the_most_probable():
    rules = SkyjoRules()
    preferences = np.arange(27, dtype=np.float32)[::-1].copy()  # lower id: more probable

    def prior(observations, masks):
        return np.tile(preferences, (len(observations), 1))

    agent = SearchAgent(make_agent("ev", rules, 0), rules, seed=0,
                        options=SearchOptions(top_actions=2), prior_fn=prior)
    masks = np.zeros((2, 27), bool)
    masks[0, [14, 15, 16, 20]] = True
    masks[1, [12, 13]] = True
    candidates = agent._candidates(np.zeros((2, agent.size), np.float32), masks, np.array([20, 13]))
    np.testing.assert_array_equal(np.flatnonzero(candidates[0]), [14, 15, 20])
    np.testing.assert_array_equal(np.flatnonzero(candidates[1]), [12, 13])
    with pytest.raises(SearchOptionError, match="top_actions needs prior_fn"):
        SearchAgent(make_agent("ev", rules, 0), rules, seed=0,
                    options=SearchOptions(top_actions=2))


def test_make_agent__critic_leaf_over_a_shipped_model():
    from agents.search.values import CriticValue, PolicyPrior

    agent = make_agent(f"search(samples=2,depth=1,leaf=critic,top_actions=3,confidence_z=2,"
                       f"verify_samples=0):ppo:{SHIPPED_2P}", SkyjoRules(), 0)
    assert isinstance(agent.value_fn, CriticValue) and agent.value_fn.shaping_weight == 1.0
    assert isinstance(agent.prior_fn, PolicyPrior)
    observations, masks = _observations_of_played_games(SkyjoRules(), games=1, seed=2, every=13)
    actions = agent.act(observations[:6], masks[:6])
    assert masks[np.arange(6), actions].all()


def test_make_agent__plain_search_over_a_network_uses_its_measured_setting():
    from agents.search import PPO_SEARCH
    from agents.search.values import CriticValue

    agent = make_agent(f"search:ppo:{SHIPPED_2P}", SkyjoRules(), 0)
    assert agent.options == PPO_SEARCH and PPO_SEARCH.leaf == "critic"
    assert PPO_SEARCH.verify_samples > 0 and isinstance(agent.value_fn, CriticValue)


def test_make_agent__search_options_over_a_network_change_only_what_they_name():
    from agents.search import PPO_SEARCH
    from agents.search.values import CriticValue, PolicyPrior

    named = make_agent(f"search(samples=2,depth=3):ppo:{SHIPPED_2P}", SkyjoRules(), 0)
    assert named.options == replace(PPO_SEARCH, samples=2, depth=3)
    assert named.options != SearchOptions(samples=2, depth=3)  # not the generic defaults
    assert isinstance(named.value_fn, CriticValue) and isinstance(named.prior_fn, PolicyPrior)
    # every tuned option can be named back to the generic default
    generic = make_agent(f"search(samples=2,depth=3,leaf=margin,top_actions=all,confidence_z=2,"
                         f"verify_samples=0):ppo:{SHIPPED_2P}", SkyjoRules(), 0)
    assert generic.options == SearchOptions(samples=2, depth=3)
    assert generic.prior_fn is None and not isinstance(generic.value_fn, CriticValue)
    # the search of expert iteration, named without its base: over the policy, a network
    assert search_settings("search(samples=4)") == replace(PPO_SEARCH, samples=4)
    assert search_settings("search") == PPO_SEARCH


def test_make_agent__search_options_over_another_base_change_the_generic_defaults():
    assert make_agent("search(samples=3,depth=5):ev", SkyjoRules(), 0).options == (
        SearchOptions(samples=3, depth=5)
    )
    assert make_agent("search:greedy", SkyjoRules(), 0).options == SearchOptions()


class _CountingAgent:
    """Wraps an agent and counts the rows it is asked to act on."""

    def __init__(self, agent):
        self.agent, self.name, self.rows = agent, agent.name, 0

    def act(self, observations, masks):
        self.rows += len(observations)
        return self.agent.act(observations, masks)


def test_search__rollouts_are_played_by_the_rollout_agent():
    rules = SkyjoRules()
    observations, masks = _observations_of_played_games(rules, games=1, seed=8, every=9)
    phases = ObservationEncoder(rules).decode(observations)["phase"]
    keep = (masks.sum(axis=1) > 1) & (phases != Phase.INITIAL_REVEAL)
    observations, masks = observations[keep][:10], masks[keep][:10]
    base = _CountingAgent(make_agent("ev", rules, 0))
    rollout = _CountingAgent(make_agent("greedy", rules, 0))
    agent = SearchAgent(base, rules, seed=2, options=FAST, rollout_agent=rollout)
    actions = agent.act(observations, masks)
    assert masks[np.arange(10), actions].all()
    assert base.rows == 10  # the base agent only makes its own choice of each row
    assert rollout.rows > 2 * int(masks.sum())  # every rollout plays on after its action
    with pytest.raises(SearchOptionError, match="rollout_precision=bfloat16 needs rollout_agent"):
        SearchAgent(base, rules, seed=0, options=SearchOptions(rollout_precision="bfloat16"))


def test_rollout_precisions__are_the_precisions_the_actor_runs():
    from agents.ppo.inference import PRECISIONS
    from agents.search.agent import ROLLOUT_PRECISIONS

    assert ROLLOUT_PRECISIONS == PRECISIONS


def test_make_agent__bfloat16_rollouts_over_a_shipped_model():
    agent = make_agent(
        f"search(samples=2,depth=2,rollout_precision=bfloat16,leaf=margin,top_actions=all,"
        f"confidence_z=2,verify_samples=0):ppo:{SHIPPED_2P}", SkyjoRules(), 0,
    )
    assert agent.options.rollout_precision == "bfloat16"
    assert agent.rollout_agent.actor.precision == "bfloat16"
    assert agent.base.actor.precision == "float32"  # its own choice stays exact
    assert agent.rollout_agent.policy is agent.base.policy  # one network, not a copy
    observations, masks = _observations_of_played_games(SkyjoRules(), games=1, seed=2, every=13)
    actions = agent.act(observations[:6], masks[:6])
    assert masks[np.arange(6), actions].all()


def test_action_values__are_the_means_the_search_chooses_by():
    rules = SkyjoRules()
    observations, masks = _observations_of_played_games(rules, games=2, seed=8, every=5)
    base = make_agent("ev", rules, 0)
    options = SearchOptions(samples=3, depth=4, confidence_z=0)
    searchable = SearchAgent(base, rules, seed=1, options=options).searchable_rows(
        observations, masks)
    assert 0 < searchable.sum() < len(searchable)  # setup reveals and forced moves are not
    observations, masks = observations[searchable][:50], masks[searchable][:50]
    values = SearchAgent(base, rules, seed=2, options=options).action_values(observations, masks)
    rows = np.arange(len(masks))
    assert values.means.shape == values.errors.shape == masks.shape
    np.testing.assert_array_equal(np.isfinite(values.means), masks)  # every legal action tried
    np.testing.assert_array_equal(values.base_actions, base.act(observations, masks))
    np.testing.assert_array_equal(values.errors[rows, values.base_actions], 0.0)
    assert (values.errors[masks] >= 0).all()
    # with z = 0 the search plays the best mean (lowest id among ties) of the same samples
    chosen = SearchAgent(base, rules, seed=2, options=options).act(observations, masks)
    np.testing.assert_array_equal(chosen, np.nanargmax(values.means, axis=1))
    assert (chosen != values.base_actions).any()


def test_act_with_values__same_moves_as_act_and_the_values_of_the_decided_rows():
    rules = SkyjoRules()
    observations, masks = _observations_of_played_games(rules, games=2, seed=8, every=5)
    observations, masks = observations[:60], masks[:60]
    base = make_agent("ev", rules, 0)
    options = SearchOptions(samples=3, depth=4, confidence_z=0, verify_samples=4)
    played = SearchAgent(base, rules, seed=2, options=options).act(observations, masks)
    actions, values = SearchAgent(base, rules, seed=2, options=options).act_with_values(
        observations, masks)
    np.testing.assert_array_equal(actions, played)
    searchable = SearchAgent(base, rules, seed=2, options=options).searchable_rows(
        observations, masks)
    assert 0 < searchable.sum() < len(searchable)
    np.testing.assert_array_equal(values.base_actions >= 0, searchable)
    assert np.isnan(values.means[~searchable]).all() and np.isnan(values.errors[~searchable]).all()
    # the searched rows hold exactly what action_values measures on the same stream
    decided = SearchAgent(base, rules, seed=2, options=options).action_values(
        observations[searchable], masks[searchable])
    for name in ("means", "errors", "base_actions"):
        np.testing.assert_array_equal(getattr(values, name)[searchable], getattr(decided, name))


def test_action_values__refuse_rows_the_search_does_not_decide():
    rules = SkyjoRules()
    observations, masks = _observations_of_played_games(rules, games=1, seed=8)
    agent = SearchAgent(make_agent("ev", rules, 0), rules, seed=1, options=FAST)
    with pytest.raises(ValueError, match="row 0 is not searched"):
        agent.action_values(observations[:1], masks[:1])  # the first setup reveal
    with pytest.raises(ValueError, match="observations must have shape"):
        agent.action_values(observations[:1, :5], masks[:1])


@pytest.mark.parametrize("rules", [
    SkyjoRules(num_players=4),
    SkyjoRules(num_players=3, finisher_penalty_mode="flat", finisher_flat_penalty=10,
               finisher_penalty_condition="other_lt", finisher_penalty_only_if_positive=False),
    # mostly negative cards: finishers at or below 0, whom only_if_positive spares
    SkyjoRules(deck={-2: 30, -1: 30, 1: 10, 2: 10}),
])
def test_expected_round_scores__a_finisher_pays_the_penalty_on_expected_scores(rules):
    from agents.search.agent import expected_grid_scores, expected_round_scores
    from skyjo_env.core import layout

    def by_hand(grid_scores, finisher):
        scores = grid_scores.copy()
        for row, seat in enumerate(finisher):
            if seat < 0:
                continue
            own = scores[row, seat]
            others = [scores[row, p] for p in range(rules.num_players) if p != seat]
            as_good = min(others) < own if rules.finisher_penalty_condition == "other_lt" \
                else min(others) <= own
            if as_good and (own > 0 or not rules.finisher_penalty_only_if_positive):
                multiplier = 2 if rules.finisher_penalty_mode == "multiplier" else 1
                scores[row, seat] = own * multiplier + rules.finisher_flat_penalty
        return scores

    state = new_batch(rules, 64)
    reset(state, np.random.default_rng(3))
    policy = np.random.default_rng(4)
    penalised = spared = 0
    while not state.all_over and penalised + spared < 400:
        mask = legal_action_mask(state)
        actions = np.argmax(policy.random(mask.shape) * mask, axis=1)
        actions[state.game_over] = -1
        step(state, actions)
        grid_scores = expected_grid_scores(state)
        finisher = state.game[:, layout.FINISHER].astype(np.int64)
        expected = by_hand(grid_scores, finisher)
        np.testing.assert_allclose(expected_round_scores(state), expected)
        changed = (expected != grid_scores).any(axis=1)
        penalised += int(changed.sum())
        spared += int(((finisher >= 0) & ~changed).sum())
    assert penalised >= 10 and spared >= 10  # both branches were met
